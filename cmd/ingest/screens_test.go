package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestScreensEscapeAndCut puts terminal escapes, newlines and a 5,000-character error into the
// values the screens print (a publication's title and error, a Bitrix24 record's id and error,
// a social account's name and error, a reason and a --by name of the status history): every
// text screen shows them escaped and cut, --json exactly.
func TestScreensEscapeAndCut(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	id := b.registerFew(t, 1)[0]
	const evil = "ESC\x1b]0;owned\x07 CSI\x1b[2J CR\rNL\nTAB\t"
	const evilShown = `ESC\x1b]0;owned\x07 CSI\x1b[2J CR\rNL\nTAB\t`
	longErr := evil + strings.Repeat("e", 5000)
	if _, err := b.pool.Exec(b.ctx, `UPDATE habr_publications SET status = 'extract_broken', title = $2 WHERE id = $1`, id, "title "+evil); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := b.run(t, "status", "set", "habr", "--id", fmt.Sprint(id), "--to", "extract_pending", "--reason", "reason "+evil, "--by", "eve "+evil)
	if code != 0 || strings.ContainsAny(stdout, "\x1b\x07\r") {
		t.Fatalf("status set = exit %d\n%q\n%s", code, stdout, stderr)
	}
	if _, err := b.pool.Exec(b.ctx, `UPDATE habr_publications SET status = 'extract_broken', last_error = $2 WHERE id = $1`, id, longErr); err != nil {
		t.Fatal(err)
	}
	var bitrixID int64
	if err := b.pool.QueryRow(b.ctx, `INSERT INTO bitrix_records (entity, source_id, payload, checksum, status, last_error)
VALUES ('users', $1, '{"NAME": "x"}', 'c', 'IMPORT_ERR', $2) RETURNING id`, "42"+evil, longErr).Scan(&bitrixID); err != nil {
		t.Fatal(err)
	}
	var socialID int64
	if err := b.pool.QueryRow(b.ctx, `INSERT INTO social_accounts (access, token_sealed, ig_user_id, username, name, biography, status, last_error)
VALUES ('connected', '\x00', '1784', $1, $1, $1, 'sync_failed', $2) RETURNING id`, "who"+evil, longErr).Scan(&socialID); err != nil {
		t.Fatal(err)
	}

	for _, argv := range [][]string{
		{"show", "habr", fmt.Sprint(id)}, {"status"}, {"status", "habr"}, {"status", "bitrix"}, {"bitrix", "status"},
		{"show", "bitrix", "users", "42" + evil}, {"status", "social"}, {"social", "status"}, {"show", "social", fmt.Sprintf("id:%d", socialID)},
	} {
		code, stdout, stderr := b.run(t, argv...)
		name := strings.Join(argv, " ")
		if code != 0 {
			t.Errorf("ingest %q = exit %d\n%s", name, code, stderr)
			continue
		}
		if strings.ContainsAny(stdout, "\x1b\x07\r") {
			t.Errorf("ingest %q prints control characters:\n%q", name, stdout)
		}
		if strings.Contains(stdout, strings.Repeat("e", shownMax)) {
			t.Errorf("ingest %q prints more than %d characters of one error", name, shownMax)
		}
		if !strings.Contains(stdout, `\x1b[2J`) {
			t.Errorf("ingest %q does not show the escapes visibly:\n%s", name, stdout)
		}
	}
	_, stdout, _ = b.run(t, "show", "habr", fmt.Sprint(id))
	for _, want := range []string{"title " + evilShown, "manual: eve " + strings.TrimSuffix(evilShown, `\t`), "reason " + evilShown, "(5032 characters in all)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("show habr does not say %q:\n%s", want, stdout)
		}
	}
	_, stdout, _ = b.run(t, "show", "bitrix", "users", "42"+evil, "--json")
	if !strings.Contains(stdout, `"last_error": "ESC\u001b]0;owned\u0007 CSI\u001b[2J CR\rNL\nTAB\t`+strings.Repeat("e", 5000)+`"`) {
		t.Errorf("show bitrix --json does not hold the error exactly:\n%.600s", stdout)
	}
}
