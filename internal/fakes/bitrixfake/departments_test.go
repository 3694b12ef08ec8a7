package bitrixfake

import (
	"fmt"
	"slices"
	"testing"
)

// department.get lists the structure by ID range with start=-1 as the ID-keyed scan asks, and
// agrees with user.get: a department's head is among its members by UF_DEPARTMENT (one nobody
// works in has none), its parent is a department of the portal, the tree has no cycles, and some
// parent is listed after its child.
func TestDepartments(t *testing.T) {
	p, srv := start(t, Options{Users: 200, Departments: 60, Seed: 65})
	var rows []map[string]any
	for last := "0"; ; {
		_, out := call(t, srv, p, "department.get", `{"FILTER":{">ID":`+last+`},"SORT":"ID","ORDER":"ASC","start":-1}`)
		page, _ := out["result"].([]any)
		if len(page) == 0 {
			break
		}
		if out["total"] != 0.0 {
			t.Fatalf("start=-1 answered a count, want total 0 (huge-data.md): %v", out["total"])
		}
		for _, r := range page {
			rows = append(rows, r.(map[string]any))
		}
		last = rows[len(rows)-1]["ID"].(string)
	}
	if len(rows) != 60 {
		t.Fatalf("listed %d departments, want 60", len(rows))
	}
	parent := map[string]string{}
	for _, r := range rows {
		if p, ok := r["PARENT"]; ok {
			parent[r["ID"].(string)] = p.(string)
		}
	}
	if _, root := parent["1"]; root || len(parent) != 59 {
		t.Fatalf("parents %v: want one for every department but the root, 1", parent)
	}
	higher := 0
	for id, par := range parent {
		if _, known := parent[par]; !known && par != "1" {
			t.Errorf("department %s names parent %s, which is not a department", id, par)
		}
		if len(par) > len(id) || (len(par) == len(id) && par > id) {
			higher++
		}
		seen := map[string]bool{}
		for at := id; at != "1"; at = parent[at] {
			if seen[at] {
				t.Fatalf("cycle through %s", at)
			}
			seen[at] = true
		}
	}
	if higher == 0 {
		t.Error("no parent has a higher id than its child: parents-first order is never needed")
	}
	headless := 0
	for _, r := range rows {
		id := r["ID"].(string)
		_, out := call(t, srv, p, "user.get", `{"FILTER":{"UF_DEPARTMENT":`+id+`},"ADMIN_MODE":true}`)
		members := ids(t, out["result"])
		head, headed := r["UF_HEAD"].(string)
		if len(members) == 0 {
			if headed {
				t.Errorf("department %s has nobody in it but a head, %s", id, head)
			}
			headless++
			continue
		}
		if !slices.Contains(members, head) {
			t.Errorf("department %s: head %s is not among its members %v", id, head, members)
		}
	}
	if headless == 0 || headless == len(rows) {
		t.Errorf("%d of %d departments without a head: want some, not all", headless, len(rows))
	}
	_, out := call(t, srv, p, "department.get", `{"ID":"7"}`)
	if got := fmt.Sprint(ids(t, out["result"])); got != "[7]" {
		t.Errorf("department.get?ID=7 listed %s", got)
	}
}
