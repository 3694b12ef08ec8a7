package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
)

// --social-accounts-file lists every generated account once, the connected ones (the viewers)
// first with their ids and tokens, then the others by username.
func TestWriteGeneratedSocialAccounts(t *testing.T) {
	const n = 500
	g := graphfake.New(graphfake.Options{Seed: 3, GeneratedAccounts: n, NoFixtureAccounts: true})
	path := filepath.Join(t.TempDir(), "accounts.csv")
	if err := writeSocialAccounts(path, g); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if lines[0] != "username,ig_user_id,token" || len(lines) != n+1 {
		t.Fatalf("%d lines, header %q; want %d accounts", len(lines)-1, lines[0], n)
	}
	seen := map[string]bool{}
	discovery := false
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) != 3 || seen[f[0]] {
			t.Fatalf("line %q: malformed or repeated", l)
		}
		seen[f[0]] = true
		connected := f[2] != ""
		if connected && discovery {
			t.Fatalf("connected account %s after a discovery one: the import's viewer must come first", f[0])
		}
		discovery = discovery || !connected
		if a, ok := g.Describe(f[0]); !ok || a.Connected != connected || (connected && (a.ID != f[1] || a.Token != f[2])) {
			t.Fatalf("line %q does not describe the fake's account %+v", l, a)
		}
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the file holds tokens: mode %v, want 0600 (%v)", info.Mode().Perm(), err)
	}
}
