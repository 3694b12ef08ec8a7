package bitrixfake

import (
	"fmt"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// expectError checks that a call failed with the status, code and description given.
func expectError(t *testing.T, status int, out map[string]any, wantStatus int, code, description string) {
	t.Helper()
	if status != wantStatus || out["error"] != code || out["error_description"] != description {
		t.Errorf("got %d %v %q, want %d %q %q", status, out["error"], out["error_description"], wantStatus, code, description)
	}
}

func total(t *testing.T, out map[string]any) int {
	t.Helper()
	n, ok := out["total"].(float64)
	if !ok {
		t.Fatalf("answer without total: %v", out)
	}
	return int(n)
}

// deletion is one delete through a REST method: its answer, the refusal of the same delete sent
// again, and the list whose total it lowers by one.
type deletion struct {
	method, body         string
	result               any
	code, description    string
	listMethod, listBody string
}

func (d deletion) run(t *testing.T, srv *httptest.Server, p *Portal) {
	t.Helper()
	_, out := call(t, srv, p, d.listMethod, d.listBody)
	listed := total(t, out)
	status, out := call(t, srv, p, d.method, d.body)
	if status != 200 || !reflect.DeepEqual(out["result"], d.result) {
		t.Fatalf("%s: %d %v, want %v", d.method, status, out, d.result)
	}
	status, out = call(t, srv, p, d.method, d.body)
	expectError(t, status, out, 400, d.code, d.description)
	_, out = call(t, srv, p, d.listMethod, d.listBody)
	if got := total(t, out); got != listed-1 {
		t.Errorf("%s after %s: total %d, want %d", d.listMethod, d.method, got, listed-1)
	}
}

func TestDeletedDealLeavesListsGetsAndChildren(t *testing.T) {
	p, srv := start(t, Options{Users: 20, Seed: 3, Companies: 20, Contacts: 20, Deals: 40})
	deals := p.DealIDs()
	var deal int
	for _, d := range deals {
		if d%4 == 0 && len(p.ProductRowIDs(d)) > 0 {
			deal = d
			break
		}
	}
	if deal == 0 {
		t.Fatal("no deal with both product rows and comments")
	}
	other := deals[0]
	otherBefore := p.DealRow(other)
	crmBefore, commentsBefore := p.CRM(), p.CommentCount()
	comments := fmt.Sprintf(`{"filter": {"ENTITY_ID": %d, "ENTITY_TYPE": "deal"}}`, deal)
	if _, out := call(t, srv, p, "crm.timeline.comment.list", comments); total(t, out) == 0 {
		t.Fatalf("deal %d has no comments to lose", deal)
	}

	deletion{method: "crm.item.delete", body: fmt.Sprintf(`{"entityTypeId": 2, "id": %d}`, deal), result: []any{},
		code: "NOT_FOUND", description: "Item not found", listMethod: "crm.item.list", listBody: `{"entityTypeId": 2, "start": 0}`}.run(t, srv, p)
	_, out := call(t, srv, p, "crm.item.list", fmt.Sprintf(`{"entityTypeId": 2, "filter": {"=id": %d}}`, deal))
	if items := out["result"].(map[string]any)["items"].([]any); len(items) != 0 {
		t.Errorf("the deleted deal is still listed: %v", items)
	}
	status, out := call(t, srv, p, "crm.item.get", fmt.Sprintf(`{"entityTypeId": 2, "id": %d}`, deal))
	expectError(t, status, out, 400, "NOT_FOUND", "Element not found")
	status, out = call(t, srv, p, "crm.item.get", fmt.Sprintf(`{"entityTypeId": 2, "id": %d}`, other))
	if item, _ := out["result"].(map[string]any)["item"].(map[string]any); status != 200 || item["id"] != float64(other) {
		t.Errorf("crm.item.get of a live deal: %d %v", status, out)
	}
	_, out = call(t, srv, p, "crm.item.productrow.list", fmt.Sprintf(`{"filter": {"=ownerType": "D", "=ownerId": %d}, "start": 0}`, deal))
	if rows := out["result"].(map[string]any)["productRows"].([]any); len(rows) != 0 || total(t, out) != 0 {
		t.Errorf("product rows of the deleted deal: %d, total %v", len(rows), out["total"])
	}
	status, out = call(t, srv, p, "crm.timeline.comment.list", comments)
	expectError(t, status, out, 400, "", "Not found")

	crm := p.CRM()
	if crm.Deals != crmBefore.Deals-1 || crm.ProductRows != crmBefore.ProductRows-len(productRowsOf(deal, deals)) ||
		p.CommentCount() >= commentsBefore {
		t.Errorf("counts after the delete: %+v (before %+v), comments %d (before %d)", crm, crmBefore, p.CommentCount(), commentsBefore)
	}
	if !reflect.DeepEqual(p.DealRow(other), otherBefore) {
		t.Error("deleting a deal changed another deal's row")
	}

	// The legacy method, and a person deleting on the portal.
	status, out = call(t, srv, p, "crm.deal.delete", fmt.Sprintf(`{"id": %d}`, other))
	if status != 200 || out["result"] != true {
		t.Errorf("crm.deal.delete: %d %v", status, out)
	}
	status, out = call(t, srv, p, "crm.deal.delete", fmt.Sprintf(`{"id": %d}`, other))
	expectError(t, status, out, 400, "", "Not found")
	if err := p.Delete(DeleteDeals, deals[len(deals)-1]); err != nil || p.Delete(DeleteDeals, deal) == nil {
		t.Errorf("Delete: %v; deleting a deleted deal again must fail", err)
	}
	if got := p.CRM().Deals; got != len(deals)-3 {
		t.Errorf("%d deals after three deletions of %d", got, len(deals))
	}
}

// productRowsOf counts a deal's rows as generated: every third deal two, the fourth 53.
func productRowsOf(deal int, deals []int) []int {
	switch i := slices.Index(deals, deal); {
	case i == 3:
		return make([]int, 53)
	case i%3 == 0:
		return make([]int, 2)
	}
	return nil
}

func TestDeletedContactAndCompanyKeepTheirLinksElsewhere(t *testing.T) {
	p, srv := start(t, Options{Users: 20, Seed: 4, Companies: 20, Contacts: 40, Deals: 60})
	var contact, company int
	for _, c := range p.PortalIDs(DeleteContacts) {
		if companies, _ := p.ContactCompanies(c); len(companies) > 0 {
			contact, company = c, companies[0]
			break
		}
	}
	deal := p.DealIDs()[0]
	dealBefore := p.DealRow(deal)
	status, out := call(t, srv, p, "crm.contact.delete", fmt.Sprintf(`{"id": %d}`, contact))
	if status != 200 || out["result"] != true {
		t.Fatalf("crm.contact.delete: %d %v", status, out)
	}
	status, out = call(t, srv, p, "crm.contact.company.items.get", fmt.Sprintf(`{"id": %d}`, contact))
	expectError(t, status, out, 400, "", "Not found")
	status, out = call(t, srv, p, "crm.item.get", fmt.Sprintf(`{"entityTypeId": 3, "id": %d}`, contact))
	expectError(t, status, out, 400, "NOT_FOUND", "Element not found")

	others := slices.DeleteFunc(p.PortalIDs(DeleteContacts), func(c int) bool {
		companies, _ := p.ContactCompanies(c)
		return !slices.Contains(companies, company)
	})
	if err := p.Delete(DeleteCompanies, company); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.CompanyIDs(), company) || !reflect.DeepEqual(p.DealRow(deal), dealBefore) {
		t.Error("the deleted company is still listed, or a deal's row changed")
	}
	for _, c := range others {
		if companies, _ := p.ContactCompanies(c); !slices.Contains(companies, company) {
			t.Errorf("contact %d lost its link to the deleted company %d: %v", c, company, companies)
		}
	}
	status, out = call(t, srv, p, "crm.company.contact.items.get", fmt.Sprintf(`{"id": %d}`, company))
	expectError(t, status, out, 400, "", "Not found")
}

func TestDeletedTaskTakesItsChildrenAndLiftsItsSubtasks(t *testing.T) {
	p, srv := start(t, Options{Users: 20, Seed: 5, Tasks: 120})
	infos := p.TaskInfos()
	byID := map[int]TaskInfo{}
	for _, ti := range infos {
		byID[ti.ID] = ti
	}
	var parent, sub TaskInfo
	for _, ti := range infos {
		if pt, ok := byID[ti.Parent]; ok && !ti.Hidden && !pt.Hidden && pt.Checklist > 0 {
			parent, sub = pt, ti
			break
		}
	}
	if parent.ID == 0 {
		t.Fatal("no visible task with a checklist and a visible subtask")
	}
	deletion{method: "tasks.task.delete", body: fmt.Sprintf(`{"taskId": %d}`, parent.ID), result: map[string]any{"task": true},
		code: "1048582", description: "No access to delete the task", listMethod: "tasks.task.list", listBody: `{"start": 0}`}.run(t, srv, p)
	status, out := call(t, srv, p, "tasks.task.get", fmt.Sprintf(`{"taskId": %d}`, parent.ID))
	expectError(t, status, out, 400, "ERROR_CORE", "TASKS_ERROR_EXCEPTION_#8; Action failed; 8/TE/ACTION_FAILED_TO_BE_PROCESSED<br>")
	status, _ = call(t, srv, p, "task.checklistitem.getlist", fmt.Sprintf(`{"TASKID": %d}`, parent.ID))
	if status != 400 {
		t.Errorf("the deleted task's checklist: status %d, want 400", status)
	}
	_, out = call(t, srv, p, "tasks.task.get", fmt.Sprintf(`{"taskId": %d, "select": ["ID", "PARENT_ID"]}`, sub.ID))
	var want any
	if parent.Parent != 0 {
		want = strconv.Itoa(parent.Parent)
	}
	if got := out["result"].(map[string]any)["task"].(map[string]any)["parentId"]; got != want {
		t.Errorf("subtask %d's parentId after its parent %d was deleted: %v, want %v (the parent's parent)", sub.ID, parent.ID, got, want)
	}
	if slices.ContainsFunc(p.TaskInfos(), func(ti TaskInfo) bool { return ti.ID == parent.ID }) {
		t.Error("TaskInfos still lists the deleted task")
	}
}

func TestDeletedPostTakesItsComments(t *testing.T) {
	p, srv := start(t, Options{Users: 10, Seed: 7, Posts: 40})
	var post PostInfo
	for _, pi := range p.PostInfos() {
		if pi.Visible && len(pi.Comments) > 1 {
			post = pi
			break
		}
	}
	if post.ID == 0 {
		t.Fatal("no visible post with comments")
	}
	byAuthor := fmt.Sprintf(`{"USER_ID": %d, "LIMIT": 1000}`, post.CommentAuthors[0])
	deletion{method: "log.blogpost.delete", body: fmt.Sprintf(`{"POST_ID": %d}`, post.ID), result: true,
		code: "", description: "No post found", listMethod: "log.blogpost.get", listBody: `{"start": 0}`}.run(t, srv, p)
	_, out := call(t, srv, p, "log.blogpost.get", fmt.Sprintf(`{"POST_ID": %d}`, post.ID))
	if rows := out["result"].([]any); len(rows) != 0 {
		t.Errorf("the deleted post by POST_ID: %v", rows)
	}
	_, out = call(t, srv, p, "log.blogcomment.user.get", byAuthor)
	for _, c := range out["result"].(map[string]any)["comments"].([]any) {
		if c.(map[string]any)["post_id"] == float64(post.ID) {
			t.Errorf("a comment of the deleted post is still listed: %v", c)
		}
	}

	// One comment of another post, by its blog comment id.
	var victim, kept int
	for _, pi := range p.PostInfos() {
		if len(pi.Comments) > 1 {
			victim, kept = pi.Comments[0], pi.Comments[1]
			break
		}
	}
	status, out := call(t, srv, p, "log.blogcomment.delete", fmt.Sprintf(`{"COMMENT_ID": %d}`, victim))
	if status != 200 || out["result"] != true {
		t.Fatalf("log.blogcomment.delete: %d %v", status, out)
	}
	status, out = call(t, srv, p, "log.blogcomment.delete", fmt.Sprintf(`{"COMMENT_ID": %d}`, victim))
	expectError(t, status, out, 400, "", "No comment found")
	remaining := map[int]bool{}
	for _, pi := range p.PostInfos() {
		for _, c := range pi.Comments {
			remaining[c] = true
		}
	}
	if remaining[victim] || !remaining[kept] {
		t.Errorf("after deleting comment %d: it remains %v, its neighbour %d remains %v", victim, remaining[victim], kept, remaining[kept])
	}
}

func TestContactsHaveSeveralCompaniesOnlyItemsGetLists(t *testing.T) {
	p, srv := start(t, Options{Users: 10, Seed: 2, Companies: 30, Contacts: 200})
	contacts := p.PortalIDs(DeleteContacts)
	if len(contacts) != 200 || len(p.CompanyIDs()) != 29 {
		t.Fatalf("%d contacts and %d companies, want 200 and 29 (one deleted)", len(contacts), len(p.CompanyIDs()))
	}
	deleted := p.CRM().DeletedCompany
	several, primaryNotFirst, toDeleted := 0, 0, 0
	for _, c := range contacts {
		_, out := call(t, srv, p, "crm.contact.company.items.get", fmt.Sprintf(`{"id": %d}`, c))
		rows := out["result"].([]any)
		primary, lastSort := 0, 0
		var companies []int
		for i, r := range rows {
			row := r.(map[string]any)
			id, sort := int(row["COMPANY_ID"].(float64)), int(row["SORT"].(float64))
			if sort <= lastSort || row["ROLE_ID"] != float64(0) {
				t.Errorf("contact %d row %d: %v, want SORT ascending and ROLE_ID 0", c, i, row)
			}
			lastSort = sort
			companies = append(companies, id)
			if row["IS_PRIMARY"] == "Y" {
				if primary != 0 {
					t.Errorf("contact %d has two primary companies", c)
				}
				primary = id
				if i > 0 {
					primaryNotFirst++
				}
			}
			if id == deleted {
				toDeleted++
			}
		}
		if len(rows) > 0 && primary == 0 {
			t.Errorf("contact %d: %v without a primary company", c, rows)
		}
		if len(rows) > 1 {
			several++
		}
		_, out = call(t, srv, p, "crm.item.list", fmt.Sprintf(`{"entityTypeId": 3, "filter": {"=id": %d}}`, c))
		row := out["result"].(map[string]any)["items"].([]any)[0].(map[string]any)
		if _, listed := row["companyIds"]; listed || row["companyId"] != float64(primary) {
			t.Errorf("contact %d in crm.item.list: companyId %v, companyIds listed %v; want the primary %d and no list", c, row["companyId"], listed, primary)
		}
		if want, wantPrimary := p.ContactCompanies(c); !slices.Equal(want, companies) || wantPrimary != primary {
			t.Errorf("contact %d: items.get %v (primary %d), ContactCompanies %v (primary %d)", c, companies, primary, want, wantPrimary)
		}
	}
	if several < 20 || primaryNotFirst == 0 || toDeleted != 1 {
		t.Errorf("%d contacts with several companies, %d with the primary not first, %d linked to the deleted company", several, primaryNotFirst, toDeleted)
	}

	company := p.CompanyIDs()[0]
	_, out := call(t, srv, p, "crm.company.contact.items.get", fmt.Sprintf(`{"id": %d}`, company))
	for _, r := range out["result"].([]any) {
		c := int(r.(map[string]any)["CONTACT_ID"].(float64))
		if companies, _ := p.ContactCompanies(c); !slices.Contains(companies, company) {
			t.Errorf("company %d lists contact %d, whose companies are %v", company, c, companies)
		}
	}
	status, out := call(t, srv, p, "crm.contact.company.items.get", `{"id": 0}`)
	expectError(t, status, out, 400, "", "The parameter 'ownerEntityID' is invalid or not defined.")
}

func TestDeletedTaskCommentsLeaveTheCardAndTheChat(t *testing.T) {
	p, srv := start(t, Options{Users: 20, Seed: 6, Tasks: 60})
	var card, chat TaskInfo
	for _, ti := range p.TaskInfos() {
		switch {
		case ti.Hidden || ti.Comments < 2:
		case !ti.Chat && card.ID == 0:
			card = ti
		case ti.Chat && !ti.ChatRefused && chat.ID == 0:
			chat = ti
		}
	}
	if card.ID == 0 || chat.ID == 0 {
		t.Fatal("no old-card task and no readable task chat with two comments")
	}
	list := fmt.Sprintf(`{"0": %d}`, card.ID)
	_, out := call(t, srv, p, "task.commentitem.getlist", list)
	first := out["result"].([]any)[0].(map[string]any)["ID"].(string)
	remove := fmt.Sprintf(`{"TASKID": %d, "ITEMID": %s}`, card.ID, first)
	if status, out := call(t, srv, p, "task.commentitem.delete", remove); status != 200 || out["result"] != true {
		t.Fatalf("task.commentitem.delete: %d %v", status, out)
	}
	status, out := call(t, srv, p, "task.commentitem.delete", remove)
	expectError(t, status, out, 400, "ERROR_CORE", "TASKS_ERROR_EXCEPTION_#4; Action is not allowed; 4/TE/ACTION_NOT_ALLOWED.<br>")
	_, out = call(t, srv, p, "task.commentitem.getlist", list)
	if rows := out["result"].([]any); len(rows) != card.Comments-1 || slices.ContainsFunc(rows, func(r any) bool { return r.(map[string]any)["ID"] == first }) {
		t.Errorf("old-card comments after deleting %s: %d rows, want %d without it", first, len(rows), card.Comments-1)
	}

	dialog := fmt.Sprintf(`{"DIALOG_ID": "chat%d", "LIMIT": 50}`, taskChatBase+chat.ID)
	_, out = call(t, srv, p, "im.dialog.messages.get", dialog)
	message := int(out["result"].(map[string]any)["messages"].([]any)[0].(map[string]any)["id"].(float64))
	if err := p.Delete(DeleteTaskComments, message); err != nil || p.Delete(DeleteTaskComments, message) == nil {
		t.Fatalf("Delete of message %d: %v; a second delete must fail", message, err)
	}
	_, out = call(t, srv, p, "im.dialog.messages.get", dialog)
	messages := out["result"].(map[string]any)["messages"].([]any)
	if len(messages) != chat.Comments-1 || slices.ContainsFunc(messages, func(m any) bool { return m.(map[string]any)["id"] == float64(message) }) {
		t.Errorf("task chat after deleting message %d: %d messages, want %d without it", message, len(messages), chat.Comments-1)
	}
	for _, ti := range p.TaskInfos() {
		if (ti.ID == card.ID || ti.ID == chat.ID) && ti.Comments != map[int]int{card.ID: card.Comments, chat.ID: chat.Comments}[ti.ID]-1 {
			t.Errorf("TaskInfos: task %d has %d comments, want one fewer", ti.ID, ti.Comments)
		}
	}
}
