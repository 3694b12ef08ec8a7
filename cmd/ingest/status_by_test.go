package main

import (
	"strings"
	"testing"
)

func TestSignerTakesByThenUser(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		by         *string
		user, want string
		err        string
	}{
		{by: str("alice"), user: "bob", want: "alice"},
		{by: nil, user: "bob", want: "bob"},
		{by: str(""), user: "bob", err: "--by was given empty: it wants a name"},
		{by: str("  "), user: "bob", err: "--by was given empty"},
		{by: nil, user: "", err: "--by NAME is required when $USER is not set"},
	} {
		got, err := signer("status set", c.by, "who", func(string) string { return c.user })
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("signer(--by %v, USER=%q) = %q, %v; want %q, %q", c.by, c.user, got, err, c.want, c.err)
		}
	}
	// On the command line: an explicit empty --by is refused while $USER is set, before
	// anything connects.
	t.Setenv("USER", "bob")
	t.Setenv("LOG_FORMAT", "text")
	for _, argv := range [][]string{
		{"status", "set", "habr", "--id", "1", "--to", "extract_pending", "--reason", "x", "--by", ""},
		{"status", "ack", "bitrix", "--id", "1", "--reason", "x", "--by", ""},
	} {
		code, _, stderr := mainOut(t, argv...)
		if code != exitUsage || !strings.Contains(stderr, "--by was given empty: it wants a name") {
			t.Errorf("ingest %q = exit %d: %s", argv, code, stderr)
		}
	}
}
