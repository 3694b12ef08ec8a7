package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
)

// TestStatusListsRecordsByID: `ingest status habr` names the records that need attention by id
// with their reasons, in text and JSON; --status lists any status, --limit bounds the ids and
// the counts stay exact; a run still marked running whose process is gone is shown abandoned.
func TestStatusListsRecordsByID(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b := &cliBundle{ctx: context.Background(), url: url, pool: pool, base: "https://habr.com"}
	for _, sql := range []string{
		`INSERT INTO habr_publications (id, url, title, feed, status, last_error) VALUES
 (101, 'https://habr.com/ru/articles/101/', 'a', '/f', 'extract_failed', 'HTTP 503 Service Unavailable'),
 (102, 'https://habr.com/ru/articles/102/', 'b', '/f', 'extract_failed', 'HTTP 503 Service Unavailable'),
 (103, 'https://habr.com/ru/articles/103/', 'c', '/f', 'extract_broken', 'stub page: the publication was deleted'),
 (104, 'https://habr.com/ru/articles/104/', 'd', '/f', 'extract_pending', NULL),
 (105, 'https://habr.com/ru/articles/105/', 'e', '/f', 'extract_pending', NULL),
 (106, 'https://habr.com/ru/articles/106/', 'f', '/f', 'extract_pending', NULL),
 (107, 'https://habr.com/ru/articles/107/', 'g', '/f', 'extracted', NULL)`,
		// A run killed with SIGKILL: recorded and holding the claim on its lock, its lock freed
		// by the server with its session, no outcome.
		`INSERT INTO runs (id, command) VALUES (900, 'extract habr')`,
		`INSERT INTO run_locks (name, run_id) VALUES ('extract habr', 900)`,
	} {
		if _, err := pool.Exec(b.ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	type report struct {
		Sources []struct {
			Name   string
			Listed struct {
				Groups []struct {
					Status, Reason string
					Count          int64
					IDs            []string
				}
				Records, Unlisted int64
			}
		}
		Runs []struct {
			ID             int64
			Outcome, Error string
		}
	}
	statusJSON := func(args ...string) report {
		t.Helper()
		code, stdout, stderr := b.run(t, append([]string{"status", "habr", "--json"}, args...)...)
		var rep report
		if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || len(rep.Sources) != 1 {
			t.Fatalf("status habr --json %v = exit %d\n%s\n%s", args, code, stdout, stderr)
		}
		return rep
	}
	groups := func(rep report) string {
		var out []string
		for _, g := range rep.Sources[0].Listed.Groups {
			out = append(out, string(g.Status)+" "+strings.Join(g.IDs, ",")+" "+g.Reason)
		}
		return strings.Join(out, "; ")
	}

	rep := statusJSON()
	if got, want := groups(rep), "extract_failed 101,102 HTTP 503 Service Unavailable; extract_broken 103 stub page: the publication was deleted"; got != want {
		t.Errorf("records needing attention = %q, want %q", got, want)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Outcome != "abandoned" || !strings.Contains(rep.Runs[0].Error, "the process is gone") {
		t.Errorf("killed run = %+v, want abandoned: its lock is free", rep.Runs)
	}
	rep = statusJSON("--status", "extract_pending", "extracted", "--limit", "2")
	if got, want := groups(rep), "extract_pending 104,105 ; extracted 107 "; got != want || rep.Sources[0].Listed.Records != 4 || rep.Sources[0].Listed.Unlisted != 1 {
		t.Errorf("--status extract_pending extracted --limit 2 = %q (%d records, %d unlisted), want %q (4, 1)", got,
			rep.Sources[0].Listed.Records, rep.Sources[0].Listed.Unlisted, want)
	}

	code, stdout, stderr := b.run(t, "status", "habr")
	for _, want := range []string{"records needing attention: 3", "ids: 101 102", "HTTP 503 Service Unavailable", "ids: 103", "abandoned"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("status habr = exit %d, lacks %q\n%s\n%s", code, want, stdout, stderr)
		}
	}
	code, _, stderr = b.run(t, "status", "habr", "--status", "bogus")
	if code != exitUsage || !strings.Contains(stderr, "extract_pending, extracted, extract_failed, extract_broken") {
		t.Errorf("--status bogus = exit %d, want a usage error listing the statuses\n%s", code, stderr)
	}
}
