package bitrixfake

import (
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// crmItems lists crm.item.list's items for a body.
func crmItems(t *testing.T, srv *httptest.Server, p *Portal, body string) ([]map[string]any, map[string]any) {
	t.Helper()
	status, out := call(t, srv, p, "crm.item.list", body)
	if status != 200 {
		t.Fatalf("crm.item.list %s: %d %v", body, status, out)
	}
	var items []map[string]any
	for _, it := range out["result"].(map[string]any)["items"].([]any) {
		items = append(items, it.(map[string]any))
	}
	return items, out
}

func idsOf(items []map[string]any, key string) []int {
	var out []int
	for _, it := range items {
		switch v := it[key].(type) {
		case float64:
			out = append(out, int(v))
		case string:
			n, _ := strconv.Atoi(v)
			out = append(out, n)
		}
	}
	return out
}

// An edit, an addition and a timeline comment move the documented fields, after the last read
// and never past the portal's clock; a filter on those fields finds exactly them.
func TestMutationsMoveDocumentedCRMFields(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p, srv := start(t, Options{Users: 10, Seed: 3, Companies: 30, Contacts: 30, Deals: 60, Now: clock.Now})
	_, out := crmItems(t, srv, p, `{"entityTypeId": 2, "select": ["id", "updatedTime"], "start": 0}`)
	read := out["time"].(map[string]any)["date_start"].(string)
	deals := p.DealIDs()
	edited, commented := deals[5], deals[7]
	if err := p.Edit(DeleteDeals, edited); err != nil {
		t.Fatal(err)
	}
	added, err := p.Add(DeleteDeals)
	if err != nil || added <= deals[len(deals)-1] {
		t.Fatalf("Add = %d, %v; the highest deal was %d", added, err, deals[len(deals)-1])
	}
	cid, err := p.AddTimelineComment(DeleteDeals, commented)
	if err != nil {
		t.Fatal(err)
	}
	items, _ := crmItems(t, srv, p, `{"entityTypeId": 2, "select": ["id"], "filter": {">updatedTime": "`+read+`"}, "start": 0}`)
	if got := idsOf(items, "id"); len(got) != 2 || got[0] != edited || got[1] != added {
		t.Errorf(">updatedTime %s = %v, want [%d %d]", read, got, edited, added)
	}
	items, out = crmItems(t, srv, p, `{"entityTypeId": 2, "select": ["id", "title", "updatedTime", "lastActivityTime"],
		"filter": {">lastActivityTime": "`+read+`"}, "start": 0}`)
	if got := idsOf(items, "id"); len(got) != 2 || got[0] != commented || got[1] != added {
		t.Errorf(">lastActivityTime = %v, want [%d %d]", got, commented, added)
	}
	// One scan for both: a nested filter with logic OR, as the docs allow.
	either, _ := crmItems(t, srv, p, `{"entityTypeId": 2, "select": ["id"], "filter": {"0": {"logic": "OR",
		"0": {">updatedTime": "`+read+`"}, "1": {">lastActivityTime": "`+read+`"}}}, "start": 0}`)
	if got := idsOf(either, "id"); !slices.Equal(got, []int{edited, commented, added}) {
		t.Errorf("updatedTime OR lastActivityTime = %v, want [%d %d %d]", got, edited, commented, added)
	}
	both, _ := crmItems(t, srv, p, `{"entityTypeId": 2, "select": ["id"], "filter": {"0": {
		"0": {">updatedTime": "`+read+`"}, "1": {">lastActivityTime": "`+read+`"}}}, "start": 0}`)
	if got := idsOf(both, "id"); !slices.Equal(got, []int{added}) {
		t.Errorf("updatedTime AND lastActivityTime = %v, want [%d]", got, added)
	}
	now, _ := time.Parse(time.RFC3339, out["time"].(map[string]any)["date_start"].(string))
	for _, it := range items {
		for _, key := range []string{"updatedTime", "lastActivityTime"} {
			at, err := time.Parse(time.RFC3339, it[key].(string))
			if err != nil || at.After(now) || !strings.HasSuffix(it[key].(string), "+03:00") {
				t.Errorf("deal %v %s = %v: not a past instant in the portal's offset (now %v)", it["id"], key, it[key], now)
			}
		}
	}
	if ids := p.TimelineCommentIDs(DeleteDeals, commented); len(ids) == 0 || ids[len(ids)-1] != cid {
		t.Errorf("timeline of deal %d = %v, want it to end with %d", commented, ids, cid)
	}
	if ids := p.TimelineCommentIDs(DeleteDeals, added); len(ids) != 0 {
		t.Errorf("the added deal has timeline comments %v", ids)
	}
	row := p.DealRow(added)
	if string(row["createdTime"]) != string(row["updatedTime"]) || string(row["createdTime"]) != string(row["lastActivityTime"]) ||
		string(row["movedTime"]) != string(row["createdTime"]) {
		t.Errorf("the added deal's dates differ: %s %s %s %s", row["createdTime"], row["updatedTime"], row["lastActivityTime"], row["movedTime"])
	}
	if err := p.DeleteTimelineComment(cid); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteTimelineComment(cid); err == nil {
		t.Error("a comment deleted twice")
	}
}

// A comment added to a task moves its activityDate and commentsCount, not its changedDate; an
// edit moves both dates; >CHANGED_DATE and >ACTIVITY_DATE find them; a deleted comment lowers
// the count and moves nothing.
func TestMutationsMoveDocumentedTaskFields(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p, srv := start(t, Options{Users: 10, Seed: 4, Tasks: 40, Now: clock.Now})
	taskRows := func(filter string) []map[string]any {
		t.Helper()
		status, out := call(t, srv, p, "tasks.task.list", `{"select": ["ID", "CHANGED_DATE", "ACTIVITY_DATE", "COMMENTS_COUNT"],
			"order": {"ID": "asc"}, "filter": `+filter+`}`)
		if status != 200 {
			t.Fatalf("tasks.task.list %s: %d %v", filter, status, out)
		}
		var rows []map[string]any
		for _, r := range out["result"].(map[string]any)["tasks"].([]any) {
			rows = append(rows, r.(map[string]any))
		}
		return rows
	}
	var visible []TaskInfo
	for _, ti := range p.TaskInfos() {
		if !ti.Hidden && !ti.ChatRefused {
			visible = append(visible, ti)
		}
	}
	before := map[int]map[string]any{}
	for _, r := range taskRows(`{}`) {
		n, _ := strconv.Atoi(r["id"].(string))
		before[n] = r
	}
	read := p.isoDate(p.now())
	edited, commented := visible[2].ID, visible[4].ID
	if err := p.Edit(DeleteTasks, edited); err != nil {
		t.Fatal(err)
	}
	cid, err := p.AddTaskComment(commented)
	if err != nil {
		t.Fatal(err)
	}
	added, err := p.Add(DeleteTasks)
	if err != nil {
		t.Fatal(err)
	}
	if got := idsOf(taskRows(`{">CHANGED_DATE": "`+read+`"}`), "id"); len(got) != 2 || got[0] != edited || got[1] != added {
		t.Errorf(">CHANGED_DATE = %v, want [%d %d]", got, edited, added)
	}
	rows := taskRows(`{">ACTIVITY_DATE": "` + read + `"}`)
	if got := idsOf(rows, "id"); len(got) != 3 || got[0] != edited || got[1] != commented || got[2] != added {
		t.Errorf(">ACTIVITY_DATE = %v, want [%d %d %d]", got, edited, commented, added)
	}
	for _, r := range rows {
		if r["id"] == strconv.Itoa(commented) {
			was := before[commented]
			n, _ := strconv.Atoi(was["commentsCount"].(string))
			if r["changedDate"] != was["changedDate"] || r["commentsCount"] != strconv.Itoa(n+1) {
				t.Errorf("commented task: %v, was %v", r, was)
			}
		}
	}
	if err := p.DeleteTaskComment(cid); err != nil {
		t.Fatal(err)
	}
	for _, r := range taskRows(`{"ID": ` + strconv.Itoa(commented) + `}`) {
		if r["commentsCount"] != before[commented]["commentsCount"] {
			t.Errorf("after the deletion: commentsCount %v, want %v", r["commentsCount"], before[commented]["commentsCount"])
		}
	}
	// Another offset names the same instant; a bare date is the portal's midnight.
	utc, _ := time.Parse(time.RFC3339, read)
	if got := idsOf(taskRows(`{">CHANGED_DATE": "`+utc.UTC().Format(time.RFC3339)+`"}`), "id"); len(got) != 2 {
		t.Errorf(">CHANGED_DATE in UTC = %v, want 2 tasks", got)
	}
}

// Product rows added, edited and deleted show in crm.item.productrow.list; the deal's dates stay.
func TestProductRowChanges(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p, srv := start(t, Options{Users: 5, Seed: 9, Deals: 10, Now: clock.Now})
	deal := p.DealIDs()[0] // two generated rows
	before := p.DealRow(deal)
	rows := p.ProductRowIDs(deal)
	_, out := call(t, srv, p, "crm.item.productrow.list", `{"filter": {"=ownerType": "D", "=ownerId": `+itoa(deal)+`}}`)
	quantity := out["result"].(map[string]any)["productRows"].([]any)[0].(map[string]any)["quantity"].(float64)
	added, err := p.AddProductRow(deal)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := strconv.Atoi(rows[0])
	second, _ := strconv.Atoi(rows[1])
	if err := p.EditProductRow(first); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteProductRow(second); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteProductRow(second); err == nil {
		t.Error("a product row deleted twice")
	}
	_, out = call(t, srv, p, "crm.item.productrow.list", `{"filter": {"=ownerType": "D", "=ownerId": `+itoa(deal)+`}}`)
	got := out["result"].(map[string]any)["productRows"].([]any)
	if len(got) != 2 || got[0].(map[string]any)["id"] != float64(first) || got[1].(map[string]any)["id"] != float64(added) {
		t.Fatalf("rows after the changes: %v", got)
	}
	if q := got[0].(map[string]any)["quantity"]; q != quantity+1 {
		t.Errorf("edited row's quantity %v, want %v", q, quantity+1)
	}
	after := p.DealRow(deal)
	if string(after["updatedTime"]) != string(before["updatedTime"]) || string(after["lastActivityTime"]) != string(before["lastActivityTime"]) {
		t.Errorf("the deal's dates moved: %s %s, were %s %s", after["updatedTime"], after["lastActivityTime"],
			before["updatedTime"], before["lastActivityTime"])
	}
}

// An edited smart process item moves its updatedTime in its own type only.
func TestEditSmartItem(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p, srv := start(t, Options{Users: 5, Seed: 14, SmartItems: 20, Now: clock.Now})
	_, out := crmItems(t, srv, p, `{"entityTypeId": 1038, "select": ["id"], "start": 0}`)
	read := out["time"].(map[string]any)["date_start"].(string)
	if err := p.Edit(SmartItems(1038), 4); err != nil {
		t.Fatal(err)
	}
	if err := p.Edit(SmartItems(777), 4); err == nil {
		t.Error("edited an item of a smart process the portal does not have")
	}
	for et, want := range map[string][]int{"1038": {4}, "1042": nil} {
		items, _ := crmItems(t, srv, p, `{"entityTypeId": `+et+`, "select": ["id", "title"], "filter": {">updatedTime": "`+read+`"}, "start": 0}`)
		if got := idsOf(items, "id"); !slices.Equal(got, want) {
			t.Errorf("type %s >updatedTime: %v, want %v", et, got, want)
		}
	}
}

// The times a filter looks at without building rows are the rows' own, after changes too.
func TestQuickTimesAreTheRows(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p := New(Options{Users: 10, Seed: 16, Companies: 80, Contacts: 80, Deals: 160, Tasks: 40, SmartItems: 30, Now: clock.Now})
	p.Churn(3, 0.1)
	for _, et := range []int{etCompany, etContact, etDeal, 1038, 1042} {
		row := func(id int) object { return p.crmRow(et, id, false) }
		if t, ok := p.smartType(et); ok {
			row = func(id int) object { return p.smartRow(t, id, false) }
		}
		for _, id := range p.crmIDs(et) {
			full, quick := row(id), p.crmQuickTimes(et, id)
			for _, f := range quick {
				if v, _ := full.get(f.key); v != f.value {
					t.Errorf("type %d id %d: %s %v in the row, %v quick", et, id, f.key, v, f.value)
				}
			}
		}
	}
}
