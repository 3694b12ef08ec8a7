package bitrixfake

import (
	"fmt"
	"testing"
)

// An author's own webhook reads that author's comments with their text; the administrator's
// webhook gets the same comments with the text withheld, before and after.
func TestAuthorWebhookReadsTheAuthorsCommentTexts(t *testing.T) {
	p, srv := start(t, Options{Users: 10, Seed: 9, Posts: 30})
	counts := map[int]int{}
	for _, pi := range p.PostInfos() {
		for _, a := range pi.CommentAuthors {
			if a != p.me() {
				counts[a]++
			}
		}
	}
	author := 0
	for a, n := range counts {
		if n > counts[author] {
			author = a
		}
	}
	if author == 0 {
		t.Fatal("no comments by other authors")
	}
	texts := func(out map[string]any) (ids []float64, empty, full int) {
		for _, c := range out["result"].(map[string]any)["comments"].([]any) {
			row := c.(map[string]any)
			ids = append(ids, row["id"].(float64))
			if row["text"] == "" {
				empty++
			} else {
				full++
			}
		}
		return ids, empty, full
	}
	adminAsk := fmt.Sprintf(`{"USER_ID": %d, "LIMIT": 1000}`, author)
	_, out := call(t, srv, p, "log.blogcomment.user.get", adminAsk)
	adminIDs, _, full := texts(out)
	if len(adminIDs) != counts[author] || full != 0 {
		t.Fatalf("the admin's webhook: %d comments, %d with text; want %d, all withheld", len(adminIDs), full, counts[author])
	}

	path := p.AddWebhook(author, "author0own0token", false)
	status, out := callAt(t, srv, path, "log.blogcomment.user.get", `{"LIMIT": 1000}`)
	ids, empty, full := texts(out)
	if status != 200 || fmt.Sprint(ids) != fmt.Sprint(adminIDs) || empty != 0 || full != counts[author] {
		t.Errorf("the author's webhook: %d, ids %v (admin's %v), %d empty; want the same comments, every text", status, ids, adminIDs, empty)
	}
	// An ordinary user's USER_ID is ignored: still the author's own comments.
	_, out = callAt(t, srv, path, "log.blogcomment.user.get", fmt.Sprintf(`{"USER_ID": %s, "LIMIT": 1000}`, p.opts.UserID))
	if ids, _, _ := texts(out); fmt.Sprint(ids) != fmt.Sprint(adminIDs) {
		t.Errorf("USER_ID through an ordinary user's webhook: %v, want the author's own %v", ids, adminIDs)
	}
	if _, out := callAt(t, srv, path, "user.admin", `{}`); out["result"] != false {
		t.Errorf("user.admin through the author's webhook: %v", out["result"])
	}
	_, out = call(t, srv, p, "log.blogcomment.user.get", adminAsk)
	if _, _, full := texts(out); full != 0 {
		t.Errorf("the admin's webhook after the author's: %d texts, want all withheld", full)
	}
	if _, out := call(t, srv, p, "user.admin", `{}`); out["result"] != true {
		t.Errorf("user.admin through the main webhook: %v", out["result"])
	}
	status, out = callAt(t, srv, fmt.Sprintf("/rest/%d/wrong0token/", author), "user.admin", `{}`)
	expectError(t, status, out, 401, "NO_AUTH_FOUND", "Wrong authorization data")
}
