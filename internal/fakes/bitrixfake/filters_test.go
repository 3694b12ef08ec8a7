package bitrixfake

import (
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
)

// crm.item.list filters on the modification fields as documented: instants in any of the accepted
// formats, the total of an ID range at start=0, and the documented refusals.
func TestCRMItemListDateAndRangeFilters(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p, srv := start(t, Options{Users: 10, Seed: 5, Companies: 20, Contacts: 20, Deals: 300, Now: clock.Now})
	items, _ := crmItems(t, srv, p, `{"entityTypeId": 2, "select": ["id", "updatedTime"], "filter": {"<=id": 50}, "start": 0}`)
	// The fortieth deal's updatedTime, every way the docs allow writing it.
	pivot := items[39]
	at, err := time.Parse(time.RFC3339, pivot["updatedTime"].(string))
	if err != nil || !slices.Contains([]string{"+03:00"}, at.Format("-07:00")) {
		t.Fatalf("updatedTime %v: %v", pivot["updatedTime"], err)
	}
	var want []int
	for _, it := range items {
		if u, _ := time.Parse(time.RFC3339, it["updatedTime"].(string)); !u.Before(at) {
			want = append(want, int(it["id"].(float64)))
		}
	}
	msk := at.In(p.opts.Location)
	for _, value := range []string{
		at.Format(time.RFC3339),
		at.UTC().Format(time.RFC3339),
		at.In(time.FixedZone("", -5*3600)).Format(time.RFC3339),
		msk.Format("2006-01-02T15:04:05"),
		msk.Format("02.01.2006 15:04:05"),
	} {
		got, _ := crmItems(t, srv, p, `{"entityTypeId": 2, "select": ["id"], "filter": {"<=id": 50, ">=updatedTime": "`+value+`"}, "start": 0}`)
		if ids := idsOf(got, "id"); !reflect.DeepEqual(ids, want) {
			t.Errorf(">=updatedTime %q: %v, want %v", value, ids, want)
		}
	}
	// A bare date is the portal's midnight.
	day := msk.Format("2006-01-02")
	midnight := time.Date(msk.Year(), msk.Month(), msk.Day(), 0, 0, 0, 0, p.opts.Location)
	var wantDay []int
	for _, it := range items {
		if u, _ := time.Parse(time.RFC3339, it["updatedTime"].(string)); u.Before(midnight) {
			wantDay = append(wantDay, int(it["id"].(float64)))
		}
	}
	got, _ := crmItems(t, srv, p, `{"entityTypeId": 2, "select": ["id"], "filter": {"<=id": 50, "<updatedTime": "`+day+`"}, "start": 0}`)
	if ids := idsOf(got, "id"); !reflect.DeepEqual(ids, wantDay) {
		t.Errorf("<updatedTime %q: %v, want %v", day, ids, wantDay)
	}

	// An ID range counted by the total of its first page.
	deals := p.DealIDs()
	lo, hi := deals[100], deals[199]
	_, out := crmItems(t, srv, p, `{"entityTypeId": 2, "select": ["id"], "filter": {">=id": `+strconv.Itoa(lo)+`, "<=id": `+strconv.Itoa(hi)+`}, "start": 0}`)
	if out["total"] != float64(100) || out["next"] != float64(50) {
		t.Errorf("range [%d, %d]: total %v next %v, want 100 and 50", lo, hi, out["total"], out["next"])
	}
	if err := p.Delete(DeleteDeals, deals[150]); err != nil {
		t.Fatal(err)
	}
	_, out = crmItems(t, srv, p, `{"entityTypeId": 2, "select": ["id"], "filter": {">=id": `+strconv.Itoa(lo)+`, "<=id": `+strconv.Itoa(hi)+`}, "start": 0}`)
	if out["total"] != float64(99) {
		t.Errorf("range after a deletion: total %v, want 99", out["total"])
	}

	sorted, _ := crmItems(t, srv, p, `{"entityTypeId": 2, "select": ["id", "updatedTime"], "filter": {"<=id": 50}, "order": {"updatedTime": "DESC"}, "start": 0}`)
	if len(sorted) != len(items) || !slices.IsSortedFunc(sorted, func(a, b map[string]any) int {
		ta, _ := time.Parse(time.RFC3339, a["updatedTime"].(string))
		tb, _ := time.Parse(time.RFC3339, b["updatedTime"].(string))
		return tb.Compare(ta)
	}) {
		t.Errorf("order updatedTime DESC: %v", sorted)
	}
	for body, want := range map[string][2]string{
		`{"entityTypeId": 2, "order": {"updatedTime": "UP"}}`:           {"INVALID_ARG_VALUE", "Invalid order: allowed sort directions are ASC, DESC. But got 'UP' for field 'updatedTime'"},
		`{"entityTypeId": 2, "order": {"DATE_MODIFY": "ASC"}}`:          {"INVALID_ARG_VALUE", "Invalid order: field 'DATE_MODIFY' is not allowed in order"},
		`{"entityTypeId": 2, "filter": {">updatedTime": "yesterday"}}`:  {"INVALID_ARG_VALUE", "Invalid filter: field 'updatedTime' has invalid value"},
		`{"entityTypeId": 2, "filter": {">DATE_MODIFY": "2024-01-01"}}`: {"INVALID_ARG_VALUE", "Invalid filter: field 'DATE_MODIFY' is not allowed in filter"},
		`{"entityTypeId": 3, "filter": {"%fm": "+7"}}`:                  {"100", "Invalid filter: field 'fm' is not allowed in filter"},
	} {
		status, out := call(t, srv, p, "crm.item.list", body)
		if status != 400 || out["error"] != want[0] || out["error_description"] != want[1] {
			t.Errorf("%s: %d %v, want 400 %v", body, status, out, want)
		}
	}
}

// The classic lists answer in UPPER_CASE with string ids, the dates the docs name, the
// multi-fields only when selected, and filter on DATE_MODIFY and LAST_ACTIVITY_TIME.
func TestClassicCRMListsAnswerAsDocumented(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p, srv := start(t, Options{Users: 10, Seed: 6, Companies: 30, Contacts: 30, Deals: 80, Now: clock.Now})
	status, out := call(t, srv, p, "crm.contact.list", `{"order": {"ID": "ASC"}, "select": ["ID", "NAME", "DATE_CREATE", "DATE_MODIFY", "LAST_ACTIVITY_TIME", "EMAIL"]}`)
	if status != 200 {
		t.Fatalf("crm.contact.list: %d %v", status, out)
	}
	rows := out["result"].([]any)
	first := rows[0].(map[string]any)
	if first["ID"] != strconv.Itoa(p.PortalIDs(DeleteContacts)[0]) || first["EMAIL"] == nil || first["PHONE"] != nil ||
		first["DATE_MODIFY"] == nil || first["LAST_ACTIVITY_TIME"] == nil || len(first) != 6 || out["total"] != float64(30) {
		t.Errorf("first contact %v, total %v", first, out["total"])
	}
	_, out = call(t, srv, p, "crm.deal.list", `{}`)
	deal := out["result"].([]any)[0].(map[string]any)
	for _, key := range []string{"ID", "TITLE", "STAGE_ID", "OPPORTUNITY", "DATE_CREATE", "DATE_MODIFY", "MODIFY_BY_ID",
		"LAST_ACTIVITY_TIME", "LAST_ACTIVITY_BY", "UF_CRM_1724077760"} {
		if _, ok := deal[key]; !ok {
			t.Errorf("deal without %s: %v", key, deal)
		}
	}
	if _, ok := deal["OPPORTUNITY"].(string); !ok || deal["contactIds"] != nil || deal["CONTACT_IDS"] != nil {
		t.Errorf("deal %v", deal)
	}

	read := out["time"].(map[string]any)["date_start"].(string)
	companies := p.CompanyIDs()
	if err := p.Edit(DeleteCompanies, companies[3]); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddTimelineComment(DeleteCompanies, companies[5]); err != nil {
		t.Fatal(err)
	}
	for filter, want := range map[string][]string{
		`{">DATE_MODIFY": "` + read + `"}`:            {strconv.Itoa(companies[3])},
		`{">LAST_ACTIVITY_TIME": "` + read + `"}`:     {strconv.Itoa(companies[5])},
		`{">=DATE_MODIFY": "` + read + `", "<ID": 3}`: nil,
	} {
		_, out := call(t, srv, p, "crm.company.list", `{"select": ["ID"], "filter": `+filter+`}`)
		var got []string
		for _, r := range out["result"].([]any) {
			got = append(got, r.(map[string]any)["ID"].(string))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("crm.company.list %s: %v, want %v", filter, got, want)
		}
	}
}

// sonet_group.get compares its dates as instants; no generated date is in the portal's future.
func TestGroupDateFilters(t *testing.T) {
	clock := NewClock(time.Date(2021, 6, 1, 12, 0, 0, 0, time.UTC)) // before most generated dates
	p, srv := start(t, Options{Users: 30, Groups: 40, Seed: 7, Now: clock.Now})
	_, out := call(t, srv, p, "sonet_group.get", `{"IS_ADMIN": "Y", "ORDER": {"ID": "ASC"}}`)
	rows := out["result"].([]any)
	pivot, _ := time.Parse(time.RFC3339, rows[10].(map[string]any)["DATE_UPDATE"].(string))
	var want []string
	for _, r := range rows {
		row := r.(map[string]any)
		for _, key := range []string{"DATE_CREATE", "DATE_UPDATE", "DATE_ACTIVITY"} {
			if at, _ := time.Parse(time.RFC3339, row[key].(string)); at.After(clock.Now()) {
				t.Errorf("group %v %s %v is after the portal's clock %v", row["ID"], key, row[key], clock.Now())
			}
		}
		if at, _ := time.Parse(time.RFC3339, row["DATE_UPDATE"].(string)); at.After(pivot) {
			want = append(want, row["ID"].(string))
		}
	}
	_, out = call(t, srv, p, "sonet_group.get", `{"IS_ADMIN": "Y", "ORDER": {"ID": "ASC"}, "FILTER": {">DATE_UPDATE": "`+
		pivot.UTC().Format(time.RFC3339)+`"}}`)
	var got []string
	for _, r := range out["result"].([]any) {
		got = append(got, r.(map[string]any)["ID"].(string))
	}
	if !reflect.DeepEqual(got, want) || len(want) == 0 {
		t.Errorf(">DATE_UPDATE %v: %v, want %v", pivot, got, want)
	}
}

// tasks.task.list filters on the documented keys by the rows' fields; a key the page does not
// list, or a date that is not one, leaves its condition out.
func TestTaskListFilterKeys(t *testing.T) {
	p, srv := start(t, Options{Users: 10, Seed: 8, Tasks: 120})
	total := func(filter string) any {
		t.Helper()
		status, out := call(t, srv, p, "tasks.task.list", `{"select": ["ID"], "filter": `+filter+`}`)
		if status != 200 {
			t.Fatalf("%s: %d %v", filter, status, out)
		}
		return out["total"]
	}
	all := total(`{}`)
	var first TaskInfo
	for _, ti := range p.TaskInfos() {
		if !ti.Hidden {
			first = ti
			break
		}
	}
	strict, strictSrv := start(t, Options{Users: 10, Seed: 8, Tasks: 120, TaskFilterAsListed: true})
	if _, out := call(t, strictSrv, strict, "tasks.task.list", `{"select": ["ID"], "filter": {"<=ACTIVITY_DATE": "01.01.2000"}}`); out["total"] != all {
		t.Errorf("TaskFilterAsListed: <=ACTIVITY_DATE gave %v tasks, want all %v", out["total"], all)
	}
	for filter, want := range map[string]any{
		`{"NO_SUCH_KEY": 5}`:                all,
		`{">CHANGED_DATE": "not a date"}`:   all,
		`{">CHANGED_DATE": "2000-01-01"}`:   all,
		`{"<CREATED_DATE": "2000-01-01"}`:   float64(0),
		`{"ID": ` + itoa(first.ID) + `}`:    float64(1),
		`{"!ID": ` + itoa(first.ID) + `}`:   all.(float64) - 1,
		`{">ACTIVITY_DATE": "01.01.2000"}`:  all,
		`{"<=ACTIVITY_DATE": "01.01.2000"}`: float64(0),
		`{"REAL_STATUS": [2, 3, 4, 5, 6]}`:  all,
		`{"@ID": [` + itoa(first.ID) + `]}`: float64(1),
	} {
		if got := total(filter); got != want {
			t.Errorf("filter %s: total %v, want %v", filter, got, want)
		}
	}
}

// Editing a user moves TIMESTAMP_X (the portal's own format), editing a group its DATE_UPDATE and
// DATE_ACTIVITY; user.get and sonet_group.get filter on them as instants.
func TestUserAndGroupEdits(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p, srv := start(t, Options{Users: 40, Groups: 10, Seed: 13, Now: clock.Now})
	_, out := call(t, srv, p, "user.get", `{}`)
	read := out["time"].(map[string]any)["date_start"].(string)
	user, group := p.UserIDs()[7], p.GroupIDs()[3]
	if err := p.Edit(Users, user); err != nil {
		t.Fatal(err)
	}
	if err := p.Edit(Groups, group); err != nil {
		t.Fatal(err)
	}
	if err := p.Edit(Groups, 999999); err == nil {
		t.Error("edited a group that does not exist")
	}
	_, out = call(t, srv, p, "user.get", `{"FILTER": {">TIMESTAMP_X": "`+read+`"}}`)
	if got := ids(t, out["result"]); !reflect.DeepEqual(got, []string{strconv.Itoa(user)}) {
		t.Errorf("user.get >TIMESTAMP_X: %v, want [%d]", got, user)
	}
	_, out = call(t, srv, p, "sonet_group.get", `{"IS_ADMIN": "Y", "FILTER": {">DATE_UPDATE": "`+read+`"}}`)
	if got := ids(t, out["result"]); !reflect.DeepEqual(got, []string{strconv.Itoa(group)}) {
		t.Errorf("sonet_group.get >DATE_UPDATE: %v, want [%d]", got, group)
	}
	_, out = call(t, srv, p, "sonet_group.get", `{"IS_ADMIN": "Y", "FILTER": {">=DATE_ACTIVITY": "`+read+`"}}`)
	if got := ids(t, out["result"]); !reflect.DeepEqual(got, []string{strconv.Itoa(group)}) {
		t.Errorf("sonet_group.get >=DATE_ACTIVITY: %v, want [%d]", got, group)
	}
}

// sonet_group.get leaves out a filter key that names no field of its rows.
func TestGroupFilterIgnoresUnknownKeys(t *testing.T) {
	p, srv := start(t, Options{Users: 10, Groups: 12, Seed: 15})
	_, all := call(t, srv, p, "sonet_group.get", `{"IS_ADMIN": "Y"}`)
	_, out := call(t, srv, p, "sonet_group.get", `{"IS_ADMIN": "Y", "FILTER": {">NO_SUCH_DATE": "2020-01-01"}}`)
	if out["total"] != all["total"] || all["total"] != float64(12) {
		t.Errorf("unknown key: total %v, without it %v", out["total"], all["total"])
	}
}
