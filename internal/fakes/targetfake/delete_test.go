package targetfake

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

type deleteAnswer struct {
	Results []struct {
		Key      string `json:"key"`
		Status   string `json:"status"`
		Children *int   `json:"children"`
		Error    *struct {
			Code      string `json:"code"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	} `json:"results"`
}

func (c *client) delete(entity, keys string) deleteAnswer {
	c.t.Helper()
	var out deleteAnswer
	if status := c.post("import."+entity+".delete", `{"keys":[`+keys+`]}`, &out); status != 200 {
		c.t.Fatalf("delete: status %d", status)
	}
	return out
}

// outcomes renders a delete answer as "status/children" or the error code, per key.
func (a deleteAnswer) outcomes() []string {
	var out []string
	for _, r := range a.Results {
		switch {
		case r.Error != nil:
			out = append(out, fmt.Sprintf("%s %s retryable=%v", r.Key, r.Error.Code, r.Error.Retryable))
		case r.Children != nil:
			out = append(out, fmt.Sprintf("%s %s/%d", r.Key, r.Status, *r.Children))
		default:
			out = append(out, r.Key+" "+r.Status)
		}
	}
	return out
}

func TestDeleteIsIdempotentAndFreesTheKey(t *testing.T) {
	s, c := start(t, Options{})
	first := c.batch("companies", `{"key":"source:companies:1","checksum":"a","payload":{"title":"A"}},
		{"key":"source:companies:2","checksum":"b","payload":{"title":"B"}}`)
	oldID := first.Results[0].TargetID

	got := c.delete("companies", `"source:companies:1","source:companies:1","source:companies:9"`).outcomes()
	want := []string{"source:companies:1 deleted/0", "source:companies:1 not_found", "source:companies:9 not_found"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("first delete: %v, want %v", got, want)
	}
	if got := c.delete("companies", `"source:companies:1"`).outcomes(); !reflect.DeepEqual(got, []string{"source:companies:1 not_found"}) {
		t.Errorf("the same delete again: %v, want not_found", got)
	}
	var count struct{ Count int }
	c.post("import.companies.count", `{}`, &count)
	var byID struct{ Missing []string }
	c.post("import.companies.get", `{"target_ids":["`+oldID+`"]}`, &byID)
	if count.Count != 1 || !reflect.DeepEqual(byID.Missing, []string{oldID}) {
		t.Errorf("after delete: count %d, get by the old target id misses %v; want 1 and the old id missing", count.Count, byID.Missing)
	}

	again := c.batch("companies", `{"key":"source:companies:1","checksum":"a","payload":{"title":"A"}}`)
	if r := again.Results[0]; r.Status != "created" || r.TargetID == oldID || r.TargetID == "" {
		t.Errorf("the key imported after its delete: %+v, want created under a new target id (old %s)", r, oldID)
	}
	if st := s.Stats(); st.Deleted != 1 || st.Cascaded != 0 || st.Duplicates != 0 {
		t.Errorf("stats %+v: want 1 deleted, none cascaded, no duplicate", st)
	}
}

func TestDeleteTakesChildrenAndLeavesReferences(t *testing.T) {
	s, c := start(t, Options{})
	users := c.batch("users", `{"key":"source:users:1","checksum":"a","payload":{}}`)
	u := users.Results[0].TargetID
	deals := c.batch("deals", `{"key":"source:deals:10","checksum":"a","payload":{}},{"key":"source:deals:11","checksum":"a","payload":{}}`)
	d10, d11 := deals.Results[0].TargetID, deals.Results[1].TargetID
	c.batch("deal_products", `{"key":"source:deal_products:1","checksum":"a","payload":{"ownerId":"`+d10+`"}},
		{"key":"source:deal_products:2","checksum":"a","payload":{"ownerId":`+d10+`}},
		{"key":"source:deal_products:3","checksum":"a","payload":{"ownerId":"`+d11+`"}}`)
	// A comment on a contact whose target id is the deal's is not the deal's: ENTITY_TYPE decides.
	c.batch("crm_comments", `{"key":"source:crm_comments:1","checksum":"a","payload":{"ENTITY_TYPE":"deal","ENTITY_ID":"`+d10+`"}},
		{"key":"source:crm_comments:2","checksum":"a","payload":{"ENTITY_TYPE":"contact","ENTITY_ID":"`+d10+`"}}`)
	tasks := c.batch("tasks", `{"key":"source:tasks:5","checksum":"a","payload":{"createdBy":"`+u+`","parentId":null}}`)
	parent := tasks.Results[0].TargetID
	c.batch("tasks", `{"key":"source:tasks:6","checksum":"a","payload":{"createdBy":"`+u+`","parentId":"`+parent+`"}}`)
	c.batch("task_checklists", `{"key":"source:task_checklists:5","checksum":"a","payload":{"task_id":"`+parent+`","items":[]}}`)
	c.batch("task_comments", `{"key":"source:task_comments:5:1","checksum":"a","payload":{"task_id":"`+parent+`","author_id":"`+u+`"}},
		{"key":"source:task_comments:5:2","checksum":"a","payload":{"task_id":"`+parent+`","author_id":"`+u+`"}}`)
	subtask, _ := s.Lookup("tasks", "source:tasks:6")

	if got := c.delete("deals", `"source:deals:10"`).outcomes(); !reflect.DeepEqual(got, []string{"source:deals:10 deleted/3"}) {
		t.Errorf("delete a deal: %v, want deleted with its 2 product rows and its comment", got)
	}
	if got := c.delete("tasks", `"source:tasks:5"`).outcomes(); !reflect.DeepEqual(got, []string{"source:tasks:5 deleted/3"}) {
		t.Errorf("delete a task: %v, want deleted with its checklist and 2 comments", got)
	}
	counts := map[string]int{}
	for _, e := range []string{"deals", "deal_products", "crm_comments", "tasks", "task_checklists", "task_comments", "users"} {
		counts[e] = s.Count(e)
	}
	want := map[string]int{"deals": 1, "deal_products": 1, "crm_comments": 1, "tasks": 1, "task_checklists": 0, "task_comments": 0, "users": 1}
	if !reflect.DeepEqual(counts, want) {
		t.Errorf("counts after the deletes %v, want %v", counts, want)
	}
	if _, ok := s.Lookup("crm_comments", "source:crm_comments:2"); !ok {
		t.Error("the contact's comment went with a deal of the same target id")
	}
	if after, ok := s.Lookup("tasks", "source:tasks:6"); !ok || string(after.Payload) != string(subtask.Payload) {
		t.Errorf("the subtask after its parent's delete: %+v, %v; want it kept as it was, parentId and all", after, ok)
	}
	if got := c.delete("task_comments", `"source:task_comments:5:1"`).outcomes(); !reflect.DeepEqual(got, []string{"source:task_comments:5:1 not_found"}) {
		t.Errorf("deleting a child after its parent: %v, want not_found", got)
	}
	res := c.batch("task_comments", `{"key":"source:task_comments:5:3","checksum":"a","payload":{"task_id":"`+parent+`","author_id":"`+u+`"}}`)
	if e := res.Results[0].Error; e == nil || e.Code != "reference_not_found" {
		t.Errorf("a comment naming the deleted task: %+v, want reference_not_found", res.Results[0])
	}
	if st := s.Stats(); st.Deleted != 2 || st.Cascaded != 6 {
		t.Errorf("stats %+v: want 2 deleted, 6 cascaded", st)
	}
}

func TestDeleteErrors(t *testing.T) {
	s, c := start(t, Options{MaxItems: 2})
	c.batch("feed", `{"key":"source:feed:1","checksum":"a","payload":{}},{"key":"source:feed:2","checksum":"a","payload":{}}`)
	s.FailItems("feed", 1)
	s.RejectKey("feed", "source:feed:2", "under legal hold")
	got := c.delete("feed", `"source:feed:1","source:feed:2"`).outcomes()
	want := []string{"source:feed:1 temporarily_unavailable retryable=true", "source:feed:2 rejected retryable=false"}
	if !reflect.DeepEqual(got, want) || s.Count("feed") != 2 {
		t.Errorf("delete with faults: %v, count %d; want %v and both records kept", got, s.Count("feed"), want)
	}
	if got := c.delete("feed", `"source:feed:1",""`).outcomes(); !reflect.DeepEqual(got, []string{"source:feed:1 deleted/0", " validation_failed retryable=false"}) {
		t.Errorf("the retryable key again, and an empty key: %v", got)
	}
	for _, body := range []string{`{"keys":[]}`, `{"keys":["a","b","c"]}`, `not json`} {
		if status := c.post("import.feed.delete", body, nil); status != 400 {
			t.Errorf("delete %s: status %d, want 400", body, status)
		}
	}
}

// TestMethodLatencyHoldsTheMethodsItNames holds back a delete, applied before its answer (as a
// kill during the wait finds it).
func TestMethodLatencyHoldsTheMethodsItNames(t *testing.T) {
	const held = 200 * time.Millisecond
	s, c := start(t, Options{MethodLatency: map[string]time.Duration{"import.deals.delete": held}})
	c.batch("deals", `{"key":"source:deals:1","checksum":"a","payload":{}}`)
	began := time.Now()
	c.delete("deals", `"source:deals:1"`)
	if took := time.Since(began); took < held {
		t.Errorf("the delete took %v, want it held back %v", took, held)
	}
	if s.Count("deals") != 0 {
		t.Error("the held delete did not apply")
	}
}
