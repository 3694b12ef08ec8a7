package status_test

import (
	"fmt"
	"testing"

	"github.com/ingest-dev/ingest/internal/status"
)

// parts is a scoped machine whose records people name by a key of their own, as Bitrix24's.
var parts = &status.Machine{Name: "parts", Table: "parts", Scope: "kind", Key: "code",
	Statuses: []status.Status{pending, done, failed, broken}}

func TestList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, sql := range []string{
		`INSERT INTO things (id, status, last_error) VALUES (1, 'failed', 'timeout'), (2, 'failed', 'timeout'),
 (3, 'failed', 'timeout'), (4, 'failed', 'HTTP 503'), (5, 'broken', 'deleted'), (6, 'broken', 'deleted'), (7, 'pending', NULL), (8, 'done', NULL)`,
		`CREATE TABLE parts (id bigint PRIMARY KEY, kind text NOT NULL, code text NOT NULL, status text NOT NULL, last_error text)`,
		`INSERT INTO parts VALUES (1, 'wheels', 'w-9', 'failed', 'bent'), (2, 'bolts', 'b-1', 'failed', 'bent'), (3, 'wheels', 'w-2', 'failed', 'bent')`,
	} {
		if _, err := b.pool.Exec(b.ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		m        *status.Machine
		statuses []status.Status
		limit    int
		// want: the groups as "scope status reason count [ids]"; records, unlisted, unlisted groups.
		want                    []string
		records, unlisted, more int64
	}{
		{"every id", things, []status.Status{failed, broken}, 0,
			[]string{" failed timeout 3 [1 2 3]", " broken deleted 2 [5 6]", " failed HTTP 503 1 [4]"}, 6, 0, 0},
		{"limited: the largest groups first, counts exact", things, []status.Status{failed, broken}, 2,
			[]string{" failed timeout 3 [1 2]", " broken deleted 2 [5 6]"}, 6, 2, 1},
		{"any status, without a reason", things, []status.Status{pending}, 10,
			[]string{" pending  1 [7]"}, 1, 0, 0},
		{"limited to one group of one id", things, []status.Status{done, broken}, 1,
			[]string{" broken deleted 2 [5]"}, 3, 2, 1},
		{"no status", things, nil, 10, nil, 0, 0, 0},
		{"by scope, named by key", parts, []status.Status{failed}, 0,
			[]string{"wheels failed bent 2 [w-9 w-2]", "bolts failed bent 1 [b-1]"}, 3, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := tc.m.List(b.ctx, b.pool, tc.statuses, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range l.Groups {
				got = append(got, fmt.Sprintf("%s %s %s %d %v", g.Scope, g.Status, g.Reason, g.Count, g.IDs))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || l.Records != tc.records || l.Unlisted != tc.unlisted || l.UnlistedGroups != tc.more {
				t.Errorf("List = %q, %d records, %d unlisted in %d groups; want %q, %d, %d, %d",
					got, l.Records, l.Unlisted, l.UnlistedGroups, tc.want, tc.records, tc.unlisted, tc.more)
			}
		})
	}
}
