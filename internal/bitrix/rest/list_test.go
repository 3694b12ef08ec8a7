package rest_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// collector gathers the pages of a listing and checks their order.
type collector struct {
	t     *testing.T
	ids   []int
	pages []rest.Page
}

func (c *collector) add(p rest.Page) error {
	c.t.Helper()
	c.pages = append(c.pages, p)
	for _, row := range p.Rows {
		var r struct{ ID rest.ID }
		if err := json.Unmarshal(row, &r); err != nil {
			c.t.Fatalf("row %s: %v", row, err)
		}
		n, err := r.ID.Int64()
		if err != nil {
			c.t.Fatal(err)
		}
		if len(c.ids) > 0 && int(n) <= c.ids[len(c.ids)-1] {
			c.t.Fatalf("ID %d after %d: out of order or repeated", n, c.ids[len(c.ids)-1])
		}
		c.ids = append(c.ids, int(n))
	}
	return nil
}

func TestListByIDFetchesEverythingIn2500RowRequests(t *testing.T) {
	tests := []struct {
		users, wantRequests int
	}{
		{4990, 3}, // count + first page, then batches of 50 and 49 pages, the last short
		{5000, 4}, // the last page is full: one more request finds it was the last
		{30, 1},   // one short page
		{0, 1},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.users), func(t *testing.T) {
			e := newEnv(t, bitrixfake.Options{Users: tt.users, Seed: 1}, rest.Options{})
			c := &collector{t: t}
			scan := rest.UsersScan(map[string]any{"select": []string{"ID", "NAME"}})
			if err := e.client.ListByID(t.Context(), scan, "", c.add); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.ids, e.portal.UserIDs()) {
				t.Fatalf("listed %d users, the portal has %d", len(c.ids), tt.users)
			}
			if got := e.portal.Stats().Requests; got != tt.wantRequests {
				t.Errorf("%d HTTP requests, want %d", got, tt.wantRequests)
			}
			last := c.pages[len(c.pages)-1]
			if !last.Last || slices.ContainsFunc(c.pages[:len(c.pages)-1], func(p rest.Page) bool { return p.Last }) {
				t.Error("Last is not set on the final page only")
			}
			for i, p := range c.pages {
				if p.Total != tt.users {
					t.Errorf("page %d: Total %d, want %d", i, p.Total, tt.users)
				}
				if i > 0 && p.Cursor != c.pages[i-1].Next {
					t.Errorf("page %d starts at %s, the one before ended at %s", i, p.Cursor, c.pages[i-1].Next)
				}
			}
		})
	}
}

func TestListByIDWithoutCounting(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 2600, Seed: 1}, rest.Options{})
	scan := rest.UsersScan(nil)
	scan.SkipCount = true
	c := &collector{t: t}
	if err := e.client.ListByID(t.Context(), scan, "", c.add); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ids, e.portal.UserIDs()) {
		t.Fatalf("listed %d users, want %d", len(c.ids), 2600)
	}
	if got := e.portal.Stats().Requests; got != 2 { // 50 pages, then 2 pages and a short one
		t.Errorf("%d requests, want 2", got)
	}
	if c.pages[0].Total != -1 {
		t.Errorf("Total = %d without a count, want -1", c.pages[0].Total)
	}
}

func TestListByIDResumesFromACursor(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 1500, Seed: 2}, rest.Options{})
	scan := rest.UsersScan(nil)
	errStop := errors.New("crash")

	first := &collector{t: t}
	var resumeFrom string
	err := e.client.ListByID(t.Context(), scan, "", func(p rest.Page) error {
		if len(first.pages) == 7 { // the eighth page is never stored
			return errStop
		}
		resumeFrom = p.Next
		return first.add(p)
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("err = %v, want the callback's error", err)
	}

	second := &collector{t: t}
	if err := e.client.ListByID(t.Context(), scan, resumeFrom, second.add); err != nil {
		t.Fatal(err)
	}
	all := append(first.ids, second.ids...)
	if !slices.Equal(all, e.portal.UserIDs()) {
		t.Errorf("%d + %d users listed, want each of %d exactly once", len(first.ids), len(second.ids), 1500)
	}
	if got := second.pages[0].Total; got != 1500-len(first.ids) {
		t.Errorf("resumed listing counts %d rows, want the %d after the cursor", got, 1500-len(first.ids))
	}
}

// TestListByIDSurvivesRowsVanishing deletes users while the listing runs:
// a chain then meets a short page earlier than the count predicted, and
// the garbage the broken references produce must not reach the callback.
func TestListByIDSurvivesRowsVanishing(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 3000, Seed: 3}, rest.Options{})
	doomed := e.portal.UserIDs()[1000:1300]
	c := &collector{t: t}
	err := e.client.ListByID(t.Context(), rest.UsersScan(nil), "", func(p rest.Page) error {
		if len(c.pages) == 0 {
			for _, id := range doomed {
				e.portal.DeleteUser(id)
			}
		}
		return c.add(p)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ids, e.portal.UserIDs()) {
		t.Errorf("listed %d users, the portal has %d left", len(c.ids), len(e.portal.UserIDs()))
	}
}

func TestListByIDWaitsOutTheOperatingLimitInsideABatch(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 990, Seed: 4,
		OperatingLimit: 480 * time.Second, RowCost: time.Second},
		rest.Options{OperatingLimit: time.Hour}) // only the portal's refusal stops it
	c := &collector{t: t}
	if err := e.client.ListByID(t.Context(), rest.UsersScan(nil), "", c.add); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ids, e.portal.UserIDs()) {
		t.Errorf("listed %d users, want %d", len(c.ids), 990)
	}
	if s := e.client.Stats(); s.OperationLimit != 1 || s.Paused <= 0 {
		t.Errorf("stats %+v, want one refused command and a pause", s)
	}
}

func TestListByIDStopsWhenTheCursorStalls(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 200, Seed: 1}, rest.Options{})
	// Filtering on a field the rows do not sort by: ">NAME" does nothing
	// useful, and the same page comes back.
	scan := rest.Scan{Method: "user.get", FilterParam: "FILTER", FilterField: "NAME",
		Order: map[string]any{"sort": "ID", "order": "DESC"}}
	err := e.client.ListByID(t.Context(), scan, "", func(rest.Page) error { return nil })
	if !errors.Is(err, rest.ErrCursorStalled) {
		t.Errorf("err = %v, want ErrCursorStalled", err)
	}
}

func TestListByStart(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 50, Groups: 700, Seed: 1}, rest.Options{})
	list := rest.List{Method: "sonet_group.get", Params: map[string]any{
		"IS_ADMIN": "Y", "ORDER": map[string]any{"ID": "ASC"}}}
	c := &collector{t: t}
	if err := e.client.ListByStart(t.Context(), list, 0, c.add); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ids, e.portal.GroupIDs()) {
		t.Fatalf("listed %d groups, want %d", len(c.ids), 700)
	}
	if got := e.portal.Stats().Requests; got != 2 { // first page, then 13 pages in one batch
		t.Errorf("%d requests, want 2", got)
	}
	for i, p := range c.pages {
		if p.Cursor != strconv.Itoa(50*i) || p.Total != 700 {
			t.Errorf("page %d: cursor %s total %d", i, p.Cursor, p.Total)
		}
	}

	resumed := &collector{t: t}
	if err := e.client.ListByStart(t.Context(), list, 650, resumed.add); err != nil {
		t.Fatal(err)
	}
	if len(resumed.ids) != 50 || resumed.ids[0] != c.ids[650] || !resumed.pages[0].Last {
		t.Errorf("resumed at 650: %d rows from %v", len(resumed.ids), resumed.ids[:1])
	}
}

func TestListByStartMoreThanOneBatch(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 2700, Seed: 1}, rest.Options{})
	c := &collector{t: t}
	list := rest.List{Method: "user.get", Params: map[string]any{"select": []string{"ID"}}}
	if err := e.client.ListByStart(t.Context(), list, 0, c.add); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ids, e.portal.UserIDs()) {
		t.Fatalf("listed %d users, want %d", len(c.ids), 2700)
	}
	// 54 pages: the first alone, then 50 and 3.
	if got := e.portal.Stats().Requests; got != 3 {
		t.Errorf("%d requests, want 3", got)
	}
}
