package bitrix_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// migrateBase runs users and groups to VERIFIED, as feed and tasks require.
func (v *env) migrateBase(e *engine.Engine) {
	v.t.Helper()
	for _, ent := range []string{bitrix.Users, bitrix.Groups} {
		if err := e.Run(v.ctx, ent); err != nil {
			v.t.Fatalf("run %s: %v", ent, err)
		}
	}
}

// payloadOf decodes a target record's payload.
func payloadOf(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFeedEndToEnd(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 60, Groups: 8, Posts: 140, PostComments: 4, Seed: 31})
	e := v.engine()
	v.migrateBase(e)
	if err := e.Run(v.ctx, bitrix.Feed); err != nil {
		t.Fatalf("feed run: %v", err)
	}
	posts := v.portal.PostInfos()
	visible := map[int]bitrixfake.PostInfo{}
	for _, p := range posts {
		if p.Visible {
			visible[p.ID] = p
		}
	}
	if got := v.target.Count(bitrix.Feed); got != len(visible) {
		t.Errorf("target holds %d posts, %d are visible to the webhook's user", got, len(visible))
	}
	// Every provable recipient is on the target, and nothing else: UA, groups and users read,
	// never the author's own right; departments are not provable.
	want := 0
	for _, p := range visible {
		for _, r := range p.Rights {
			if r == "U"+strconv.Itoa(p.Author) || strings.HasPrefix(r, "DR") {
				continue
			}
			want++
		}
	}
	if got := v.target.Count(bitrix.FeedRecipients); got != want {
		t.Errorf("target holds %d recipients, want %d", got, want)
	}
	// Comments: the webhook user's own on visible posts are imported with their text; every
	// other one is listed as not migratable, none imported with an empty text.
	mine, others := 0, 0
	for _, p := range posts {
		for _, a := range p.CommentAuthors {
			if p.Visible && a == 1 {
				mine++
			} else {
				others++
			}
		}
	}
	if got := v.target.Count(bitrix.FeedComments); got != mine {
		t.Errorf("target holds %d comments, want the webhook user's %d", got, mine)
	}
	for _, r := range v.target.Records(bitrix.FeedComments) {
		if text, _ := payloadOf(t, r.Payload)["text"].(string); text == "" {
			t.Errorf("comment %s imported with an empty text", r.Key)
		}
	}
	rep, err := e.Verify(v.ctx, bitrix.Feed)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.UnreachableCount != others {
		t.Errorf("verify: %d unreachable, want %d: %s", rep.UnreachableCount, others, rep.Summary())
	}
	for _, u := range rep.Unreachable {
		if u.Entity != bitrix.FeedComments || !strings.Contains(u.Reason, "out of reach") && !strings.Contains(u.Reason, "withheld") {
			t.Errorf("unreachable %+v", u)
		}
	}
	// Authors and mentions are target ids.
	users := map[string]bool{}
	for _, u := range v.target.Records(bitrix.Users) {
		users[u.TargetID] = true
	}
	for _, r := range v.target.Records(bitrix.Feed) {
		p := payloadOf(t, r.Payload)
		if !users[p["AUTHOR_ID"].(string)] {
			t.Errorf("post %s: author %v is no target user", r.Key, p["AUTHOR_ID"])
		}
		for _, m := range mentionIDs(p["DETAIL_TEXT"].(string)) {
			if !users[m] {
				t.Errorf("post %s mentions %s, no target user", r.Key, m)
			}
		}
		if _, ok := p["NUM_COMMENTS"]; ok {
			t.Errorf("post %s carries NUM_COMMENTS", r.Key)
		}
	}
	if s := v.target.Stats(); s.Duplicates != 0 || s.Failed != 0 {
		t.Errorf("target stats %+v", s)
	}
}

func mentionIDs(text string) []string {
	var out []string
	for _, part := range strings.Split(text, "[USER=")[1:] {
		id, _, _ := strings.Cut(part, "]")
		id, _, _ = strings.Cut(id, " ")
		out = append(out, id)
	}
	return out
}

func TestTasksEndToEnd(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 60, Groups: 8, Tasks: 200, TaskComments: 3, Seed: 32})
	e := v.engine()
	v.migrateBase(e)
	err := e.Run(v.ctx, bitrix.Tasks)
	infos := v.portal.TaskInfos()
	hidden := map[int]bool{}
	for _, ti := range infos {
		hidden[ti.ID] = ti.Hidden
	}
	// Subtasks of hidden tasks lose the link, not the task: imported with parentId null, their
	// checklists and comments with them, and verify lists the dropped link.
	var orphans []string
	for _, ti := range infos {
		if !ti.Hidden && ti.Parent != 0 && hidden[ti.Parent] {
			orphans = append(orphans, strconv.Itoa(ti.ID))
		}
	}
	if len(orphans) == 0 {
		t.Fatal("no subtask of a hidden task; the portal should have some")
	}
	if err != nil {
		t.Fatalf("tasks run: %v", err)
	}
	for _, id := range orphans {
		r := v.record(bitrix.Tasks, id)
		rec, ok := v.target.Lookup(bitrix.Tasks, "source:tasks:"+id)
		if r.Status != engine.ImportOK || !ok || payloadOf(t, rec.Payload)["parentId"] != nil {
			t.Errorf("task %s under a hidden parent: %s %q, on the target %v", id, r.Status, r.LastError, ok)
		}
	}
	above := 0
	for _, ti := range infos {
		if ti.Parent > ti.ID && !ti.Hidden && !hidden[ti.Parent] {
			above++
		}
	}
	if above == 0 {
		t.Fatal("no task has a parent listed after it; the portal should have some")
	}
	// Every task imported names its parent by target id: parents went first, though some are
	// listed after their children.
	byKey := map[string]string{}
	for _, r := range v.target.Records(bitrix.Tasks) {
		byKey[r.TargetID] = r.Key
	}
	imported := 0
	for _, ti := range infos {
		if ti.Hidden || slices.Contains(orphans, strconv.Itoa(ti.ID)) {
			continue
		}
		rec, ok := v.target.Lookup(bitrix.Tasks, "source:tasks:"+strconv.Itoa(ti.ID))
		if !ok {
			t.Errorf("task %d missing on the target", ti.ID)
			continue
		}
		imported++
		p := payloadOf(t, rec.Payload)
		switch {
		case ti.Parent == 0 && p["parentId"] != nil:
			t.Errorf("task %d: parentId %v, want null", ti.ID, p["parentId"])
		case ti.Parent != 0 && byKey[p["parentId"].(string)] != "source:tasks:"+strconv.Itoa(ti.Parent):
			t.Errorf("task %d: parentId %v names %s, want task %d", ti.ID, p["parentId"], byKey[p["parentId"].(string)], ti.Parent)
		}
		if _, ok := p["UF_TASK_STORY_POINTS"]; ok {
			t.Errorf("task %d carries a field the target cannot hold", ti.ID)
		}
	}
	if imported == 0 {
		t.Fatal("no task imported")
	}
	// Comments by path, checklists.
	chat, old, lost := 0, 0, 0
	for _, ti := range infos {
		if ti.Hidden {
			continue
		}
		switch {
		case ti.ChatRefused:
			lost++
		case ti.Chat:
			chat += ti.Comments
		default:
			old += ti.Comments
		}
	}
	paths := map[string]int{}
	for _, r := range v.target.Records(bitrix.TaskComments) {
		paths[payloadOf(t, r.Payload)["path"].(string)]++
	}
	if paths["chat"] != chat || paths["old_card"] != old {
		t.Errorf("comments on the target by path %v, want chat %d old_card %d", paths, chat, old)
	}
	// The attachments' URLs carry a per-request token: never stored, never sent.
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE payload::text LIKE '%auth%5Bauth%5D%'`); n != 0 {
		t.Errorf("%d records store a URL with a token", n)
	}
	for _, ent := range []string{bitrix.TaskComments, bitrix.TaskChecklists} {
		for _, r := range v.target.Records(ent) {
			if strings.Contains(string(r.Payload), "DOWNLOAD_URL") {
				t.Errorf("%s sent with a download URL", r.Key)
			}
		}
	}
	rep, err := e.Verify(v.ctx, bitrix.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verify: %s", rep.Summary())
	if !rep.Clean() || rep.DroppedLinksCount != len(orphans) {
		t.Errorf("verify lists %d dropped links, want %d for %v, clean %v", rep.DroppedLinksCount, len(orphans), orphans, rep.Clean())
	}
	for _, d := range rep.DroppedLinks {
		if !slices.Contains(orphans, d.SourceID) || !strings.Contains(d.Reason, "parent task") {
			t.Errorf("dropped link %+v", d)
		}
	}
	if rep.UnreachableCount != lost {
		t.Errorf("verify lists %d unreachable, want the %d refused task chats", rep.UnreachableCount, lost)
	}
	if rep.Details["comments_chat_path"] == 0 || rep.Details["comments_old_card_path"] == 0 || rep.Details["checklists"] == 0 {
		t.Errorf("verify details %v", rep.Details)
	}
	if s := v.target.Stats(); s.Duplicates != 0 {
		t.Errorf("target stats %+v", s)
	}
}
