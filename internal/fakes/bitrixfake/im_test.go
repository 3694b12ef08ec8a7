package bitrixfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const me = 1 // the webhook's user in every test portal

func chatsOf(p *Portal, typ string, readable bool) []Chat {
	var out []Chat
	for _, c := range p.Chats() {
		if c.Type == typ && slices.Contains(c.Members, me) == readable {
			out = append(out, c)
		}
	}
	return out
}

func resultOf(t *testing.T, status int, out map[string]any) map[string]any {
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("status %d: %v", status, out)
	}
	res, ok := out["result"].(map[string]any)
	if !ok {
		t.Fatalf("result is %T, want an object: %v", out["result"], out)
	}
	return res
}

// messageIDsOf returns the ids of a page of im.dialog.messages.get.
func messageIDsOf(t *testing.T, res map[string]any) []int {
	t.Helper()
	var ids []int
	for _, m := range res["messages"].([]any) {
		ids = append(ids, int(m.(map[string]any)["id"].(float64)))
	}
	return ids
}

// sameShape checks that got has every key of want with the same JSON type,
// descending into objects; null on either side matches anything.
func sameShape(t *testing.T, path string, want, got map[string]any) {
	t.Helper()
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			t.Errorf("%s.%s missing", path, key)
			continue
		}
		if w == nil || g == nil {
			continue
		}
		wm, wIsMap := w.(map[string]any)
		gm, gIsMap := g.(map[string]any)
		switch {
		case wIsMap && gIsMap:
			sameShape(t, path+"."+key, wm, gm)
		case reflect.TypeOf(w) != reflect.TypeOf(g) && !emptyEither(w, g):
			t.Errorf("%s.%s is %T (%v), the sample has %T (%v)", path, key, g, g, w, w)
		}
	}
}

// emptyEither tolerates PHP's empty array standing for an empty object.
func emptyEither(a, b any) bool {
	isEmpty := func(v any) bool {
		l, ok := v.([]any)
		return ok && len(l) == 0
	}
	_, aMap := a.(map[string]any)
	_, bMap := b.(map[string]any)
	return (isEmpty(a) && bMap) || (isEmpty(b) && aMap)
}

func TestRecentListPagesOverlapAndCoverEveryDialog(t *testing.T) {
	p, srv := start(t, Options{Users: 40, Groups: 8, Chats: 150, OpenLines: 3, Seed: 2})
	want := map[int]bool{}
	for _, c := range p.Chats() {
		if slices.Contains(c.Members, me) {
			want[c.ID] = true
		}
	}
	seen := map[int]int{}
	calls := 0
	for offset := 0; ; offset += 20 {
		calls++
		status, out := call(t, srv, p, "im.recent.list", fmt.Sprintf(`{"OFFSET":%d,"LIMIT":20}`, offset))
		res := resultOf(t, status, out)
		items := res["items"].([]any)
		if len(items) > 20 {
			t.Fatalf("offset %d: %d items, LIMIT is 20", offset, len(items))
		}
		for _, it := range items {
			seen[int(it.(map[string]any)["chat_id"].(float64))]++
		}
		if out["total"] != -1.0 {
			t.Errorf("total = %v, want -1", out["total"])
		}
		if res["hasMore"] != res["hasMorePages"] {
			t.Errorf("hasMore %v and hasMorePages %v differ", res["hasMore"], res["hasMorePages"])
		}
		if res["hasMore"] != true {
			if _, ok := out["next"]; ok {
				t.Errorf("last page has next = %v", out["next"])
			}
			break
		}
		if want := float64(offset + len(items)); out["next"] != want {
			t.Errorf("next = %v, want OFFSET+items = %v", out["next"], want)
		}
		if calls > 100 {
			t.Fatal("hasMore never ends")
		}
	}
	repeated := 0
	for id, n := range seen {
		if !want[id] {
			t.Errorf("chat %d listed, but the webhook user is not in it", id)
		}
		if n > 1 {
			repeated++
		}
	}
	for id := range want {
		if seen[id] == 0 {
			t.Errorf("chat %d of the webhook user never listed", id)
		}
	}
	if repeated == 0 {
		t.Error("no dialog appeared on two pages; the recent list should overlap like the real one")
	}
}

func TestRecentListSkipsAndLimits(t *testing.T) {
	p, srv := start(t, Options{Users: 40, Groups: 4, Chats: 60, OpenLines: 2, Seed: 3})
	count := func(body string) (n int, types map[string]bool) {
		status, out := call(t, srv, p, "im.recent.list", body)
		types = map[string]bool{}
		for _, it := range resultOf(t, status, out)["items"].([]any) {
			item := it.(map[string]any)
			typ := item["type"].(string)
			if chat, ok := item["chat"].(map[string]any)["type"].(string); ok {
				typ = chat
			}
			types[typ] = true
			n++
		}
		return n, types
	}
	if n, _ := count(`{}`); n > 50 {
		t.Errorf("default LIMIT gave %d items, want at most 50", n)
	}
	if n, _ := count(`{"LIMIT":500}`); n > 200 {
		t.Errorf("LIMIT 500 gave %d items, want at most 200", n)
	}
	tests := []struct {
		body   string
		absent string
	}{
		{`{"LIMIT":200,"SKIP_OPENLINES":"Y"}`, "lines"},
		{`{"LIMIT":200,"SKIP_DIALOG":"Y"}`, "user"},
		{`{"LIMIT":200,"SKIP_CHAT":"Y"}`, "chat"},
	}
	for _, tt := range tests {
		if _, types := count(tt.body); types[tt.absent] {
			t.Errorf("%s still lists %s dialogs", tt.body, tt.absent)
		}
	}
}

func TestIMAnswersHaveTheShapeOfTheSamples(t *testing.T) {
	p, srv := start(t, Options{Users: 30, Groups: 5, Chats: 40, MessagesPerChat: 60, Seed: 4})

	status, out := call(t, srv, p, "im.recent.list", `{"LIMIT":200}`)
	sample := readFixture(t, "im.recent.list.json")["result"].(map[string]any)
	res := resultOf(t, status, out)
	for key := range sample {
		if _, ok := res[key]; !ok {
			t.Errorf("im.recent.list result.%s missing", key)
		}
	}
	byType := map[string]map[string]any{}
	for _, it := range res["items"].([]any) {
		item := it.(map[string]any)
		byType[item["type"].(string)] = item
	}
	for _, s := range sample["items"].([]any) {
		item := s.(map[string]any)
		typ := item["type"].(string)
		if byType[typ] == nil {
			t.Fatalf("no recent item of type %s", typ)
		}
		sameShape(t, "recent "+typ, item, byType[typ])
	}

	// The sample's page has messages, their authors and an image.
	sampleMsgs := readFixture(t, "im.dialog.messages.get.json")["result"].(map[string]any)
	var image map[string]any
	for _, c := range p.Chats() {
		if !slices.Contains(c.Members, me) {
			continue
		}
		status, out = call(t, srv, p, "im.dialog.messages.get", fmt.Sprintf(`{"DIALOG_ID":"chat%d","LIMIT":50}`, c.ID))
		res = resultOf(t, status, out)
		sameShape(t, "messages", sampleMsgs, res)
		for _, list := range []string{"messages", "users"} {
			sameShape(t, list+"[0]", sampleMsgs[list].([]any)[0].(map[string]any), res[list].([]any)[0].(map[string]any))
		}
		for _, f := range res["files"].([]any) {
			if file := f.(map[string]any); file["type"] == "image" {
				image = file
			}
		}
		if image != nil {
			break
		}
	}
	if image == nil {
		t.Fatal("no image in the first 50 messages of any chat")
	}
	sameShape(t, "files[image]", sampleMsgs["files"].([]any)[0].(map[string]any), image)

	chat := chatsOf(p, "chat", true)[0]
	status, out = call(t, srv, p, "im.dialog.get", fmt.Sprintf(`{"DIALOG_ID":"chat%d"}`, chat.ID))
	sameShape(t, "im.dialog.get", readFixture(t, "im.dialog.get.json")["result"].(map[string]any), resultOf(t, status, out))
}

func TestDialogMessagesCursors(t *testing.T) {
	p, srv := start(t, Options{Users: 20, Chats: 10, MessagesPerChat: 120, Seed: 5})
	c := chatsOf(p, "chat", true)[0]
	all := c.MessageIDs
	if len(all) != 120 {
		t.Fatalf("chat has %d messages, want MessagesPerChat = 120", len(all))
	}
	desc := slices.Clone(all)
	slices.Reverse(desc)
	page := func(body string) []int {
		status, out := call(t, srv, p, "im.dialog.messages.get", body)
		return messageIDsOf(t, resultOf(t, status, out))
	}
	dialog := fmt.Sprintf(`"DIALOG_ID":"chat%d"`, c.ID)
	tests := []struct {
		name string
		body string
		want []int
	}{
		{"newest 20 by default", `{` + dialog + `}`, desc[:20]},
		{"LIMIT is cut to 50", `{` + dialog + `,"LIMIT":200}`, desc[:50]},
		{"LAST_ID: older than it, newest first", fmt.Sprintf(`{%s,"LIMIT":50,"LAST_ID":%d}`, dialog, desc[49]), desc[50:100]},
		{"LAST_ID as a string", fmt.Sprintf(`{%s,"LIMIT":50,"LAST_ID":"%d"}`, dialog, desc[99]), desc[100:]},
		{"FIRST_ID: newer than it, oldest first", fmt.Sprintf(`{%s,"LIMIT":50,"FIRST_ID":%d}`, dialog, all[9]), all[10:60]},
		{"FIRST_ID 0 starts at the oldest", `{` + dialog + `,"LIMIT":5,"FIRST_ID":0}`, all[:5]},
		{"FIRST_ID wins over LAST_ID", fmt.Sprintf(`{%s,"LIMIT":3,"FIRST_ID":%d,"LAST_ID":%d}`, dialog, all[0], all[50]), all[1:4]},
		{"nothing older than the first", fmt.Sprintf(`{%s,"LAST_ID":%d}`, dialog, all[0]), nil},
		{"undocumented CHAT_ID", fmt.Sprintf(`{"CHAT_ID":%d,"LIMIT":1}`, c.ID), desc[:1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := page(tt.body); !slices.Equal(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
		})
	}

	// A full walk back with LAST_ID = the smallest id so far reads every
	// message once.
	var walked []int
	for last := 0; ; {
		ids := page(fmt.Sprintf(`{%s,"LIMIT":50,"LAST_ID":%d}`, dialog, last))
		if len(ids) == 0 {
			break
		}
		walked = append(walked, ids...)
		last = ids[len(ids)-1]
	}
	if !slices.Equal(walked, desc) {
		t.Errorf("walk back read %d messages, want the chat's %d in descending order", len(walked), len(desc))
	}
}

func TestPrivateDialogByUserID(t *testing.T) {
	p, srv := start(t, Options{Users: 20, Chats: 12, Seed: 6})
	c := chatsOf(p, "private", true)[0]
	partner := c.Members[0]
	if partner == me {
		partner = c.Members[1]
	}
	status, out := call(t, srv, p, "im.dialog.messages.get", fmt.Sprintf(`{"DIALOG_ID":"%d","LIMIT":1}`, partner))
	if got := resultOf(t, status, out)["chat_id"]; got != float64(c.ID) {
		t.Errorf("dialog with user %d is chat %v, want %d", partner, got, c.ID)
	}
}

func TestChatAccessAndErrors(t *testing.T) {
	p, srv := start(t, Options{Users: 30, Groups: 12, Chats: 5, Seed: 7})
	in, out := chatsOf(p, "sonetGroup", true), chatsOf(p, "sonetGroup", false)
	if len(in) == 0 || len(out) == 0 {
		t.Fatalf("want workgroup chats both with and without the webhook user: %d and %d", len(in), len(out))
	}
	readable, closed := in[0], out[0]
	fixture := func(name string) map[string]any { return readFixture(t, name) }
	tests := []struct {
		name, method, body string
		wantStatus         int
		want               any // the whole answer, or its result
	}{
		{"messages of a chat the user is not in", "im.dialog.messages.get", fmt.Sprintf(`{"DIALOG_ID":"chat%d"}`, closed.ID), 403,
			map[string]any{"error": "ACCESS_ERROR", "error_description": "You do not have access to the specified dialog"}},
		{"card of a chat the user is not in", "im.chat.get", fmt.Sprintf(`{"DIALOG_ID":"chat%d"}`, closed.ID), 403,
			map[string]any{"error": "ACCESS_ERROR", "error_description": "You do not have access to the specified dialog"}},
		{"messages of a chat that does not exist", "im.dialog.messages.get", `{"DIALOG_ID":"chat999999"}`, 403,
			map[string]any{"error": "ACCESS_ERROR", "error_description": "You do not have access to the specified dialog"}},
		{"no DIALOG_ID", "im.dialog.messages.get", `{}`, 400, fixture("im.dialog.messages.get.error.json")},
		{"bad DIALOG_ID", "im.dialog.get", `{"DIALOG_ID":"group5"}`, 400, fixture("im.dialog.get.error.json")},
		{"no CHAT_ID", "im.chat.user.list", `{}`, 400, fixture("im.chat.user.list.error.json")},
		{"cursor that is not a number", "im.dialog.messages.get", fmt.Sprintf(`{"DIALOG_ID":"chat%d","LAST_ID":"$result[x]"}`, readable.ID), 400,
			map[string]any{"error": "LAST_ID_STRING", "error_description": "Last ID can't be string"}},
		{"participants of a chat the user is not in: an empty list", "im.chat.user.list", fmt.Sprintf(`{"CHAT_ID":%d}`, closed.ID), 200, []any{}},
		{"participants", "im.chat.user.list", fmt.Sprintf(`{"CHAT_ID":%d}`, readable.ID), 200, floats(readable.Members)},
		{"workgroup chat by entity, for anyone", "im.chat.get", fmt.Sprintf(`{"ENTITY_TYPE":"SONET_GROUP","ENTITY_ID":"%s"}`, closed.EntityID), 200,
			map[string]any{"ID": float64(closed.ID)}},
		{"unknown entity: null", "im.chat.get", `{"ENTITY_TYPE":"SONET_GROUP","ENTITY_ID":"999999"}`, 200, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, answer := call(t, srv, p, tt.method, tt.body)
			if status != tt.wantStatus {
				t.Errorf("status %d, want %d", status, tt.wantStatus)
			}
			var got any = answer
			if status == http.StatusOK {
				got = answer["result"]
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
		})
	}

	// Without the im scope the webhook gets insufficient_scope.
	p2, srv2 := start(t, Options{Users: 5, Chats: 2, Seed: 1, Scopes: []string{"user"}})
	if status, answer := call(t, srv2, p2, "im.recent.list", `{}`); status != 403 || answer["error"] != "insufficient_scope" {
		t.Errorf("im.recent.list without the im scope: %d %v", status, answer)
	}
}

func floats(ids []int) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = float64(id)
	}
	return out
}

func TestGeneratedChatsLookReal(t *testing.T) {
	p, srv := start(t, Options{Users: 60, Groups: 6, Chats: 80, OpenLines: 2, MessagesPerChat: 50, Seed: 8})
	types := map[string]int{}
	for _, c := range p.Chats() {
		types[c.Type]++
	}
	for _, typ := range []string{"private", "chat", "open", "tasksTask", "sonetGroup", "lines"} {
		if types[typ] == 0 {
			t.Errorf("no %s chat among %v", typ, types)
		}
	}
	if types["sonetGroup"] != 6 {
		t.Errorf("%d workgroup chats, want one per group (6)", types["sonetGroup"])
	}

	features := map[string]bool{}
	users := map[int]bool{}
	for _, id := range p.UserIDs() {
		users[id] = true
	}
	for _, c := range p.Chats() {
		if !slices.Contains(c.Members, me) {
			continue
		}
		status, out := call(t, srv, p, "im.dialog.messages.get", fmt.Sprintf(`{"DIALOG_ID":"chat%d","LIMIT":50}`, c.ID))
		res := resultOf(t, status, out)
		for _, m := range res["messages"].([]any) {
			msg := m.(map[string]any)
			text := msg["text"].(string)
			params, _ := msg["params"].(map[string]any)
			for _, f := range []string{"[b]", "[USER=", "[URL=", "\n", "-----"} {
				if strings.Contains(text, f) {
					features[f] = true
				}
			}
			for _, k := range []string{"FILE_ID", "LIKE", "IS_EDITED", "CODE"} {
				if params[k] != nil {
					features[k] = true
				}
			}
			if msg["author_id"] == 0.0 {
				features["system"] = true
			}
		}
		if c.Type == "lines" {
			for _, u := range c.Members {
				if !users[u] {
					features["guest"] = true
				}
			}
		}
	}
	for _, f := range []string{"[b]", "[USER=", "[URL=", "\n", "-----", "FILE_ID", "LIKE", "IS_EDITED", "CODE", "system", "guest"} {
		if !features[f] {
			t.Errorf("no message with %q", f)
		}
	}
}

func TestEditAndAddMessage(t *testing.T) {
	p, srv := start(t, Options{Users: 20, Chats: 30, Seed: 9})
	c := chatsOf(p, "chat", true)[0]
	target := c.MessageIDs[3]
	get := func(body string) []any {
		status, out := call(t, srv, p, "im.dialog.messages.get", body)
		return resultOf(t, status, out)["messages"].([]any)
	}
	one := fmt.Sprintf(`{"DIALOG_ID":"chat%d","LIMIT":1,"LAST_ID":%d}`, c.ID, target+1)
	before := get(one)[0].(map[string]any)

	if err := p.EditMessage(target, "исправленный текст"); err != nil {
		t.Fatal(err)
	}
	after := get(one)[0].(map[string]any)
	if after["text"] != "исправленный текст" || after["id"] != before["id"] || after["date"] != before["date"] {
		t.Errorf("after the edit: %v (before: %v)", after, before)
	}
	if params, _ := after["params"].(map[string]any); params["IS_EDITED"] != "Y" {
		t.Errorf("edited message params %v, want IS_EDITED=Y", after["params"])
	}

	last := c.MessageIDs[len(c.MessageIDs)-1]
	id, err := p.AddMessage(c.ID, me, "новое сообщение")
	if err != nil {
		t.Fatal(err)
	}
	if id <= last {
		t.Errorf("added message id %d, want above the chat's newest %d", id, last)
	}
	fresh := get(fmt.Sprintf(`{"DIALOG_ID":"chat%d","FIRST_ID":%d}`, c.ID, last))
	if len(fresh) != 1 || fresh[0].(map[string]any)["text"] != "новое сообщение" {
		t.Errorf("FIRST_ID = the old newest id gives %v", fresh)
	}
	status, out := call(t, srv, p, "im.recent.list", `{"LIMIT":1}`)
	if top := resultOf(t, status, out)["items"].([]any)[0].(map[string]any); top["chat_id"] != float64(c.ID) {
		t.Errorf("recent list starts with chat %v, want the one just written to (%d)", top["chat_id"], c.ID)
	}

	if err := p.EditMessage(1, "x"); !errors.Is(err, ErrNoSuchMessage) {
		t.Errorf("editing message 1: %v, want ErrNoSuchMessage", err)
	}
	if _, err := p.AddMessage(999999, me, "x"); !errors.Is(err, ErrNoSuchChat) {
		t.Errorf("adding to chat 999999: %v, want ErrNoSuchChat", err)
	}
}

func TestChatMembershipHooks(t *testing.T) {
	p, srv := start(t, Options{Users: 20, Chats: 10, Seed: 10})
	c := chatsOf(p, "chat", true)[0]
	body := fmt.Sprintf(`{"DIALOG_ID":"chat%d"}`, c.ID)
	if err := p.RemoveChatUser(c.ID, me); err != nil {
		t.Fatal(err)
	}
	if status, _ := call(t, srv, p, "im.dialog.messages.get", body); status != http.StatusForbidden {
		t.Errorf("after leaving: status %d, want 403", status)
	}
	status, out := call(t, srv, p, "im.recent.list", `{"LIMIT":200}`)
	for _, it := range resultOf(t, status, out)["items"].([]any) {
		if it.(map[string]any)["chat_id"] == float64(c.ID) {
			t.Error("a chat the user left is still in the recent list")
		}
	}
	if err := p.AddChatUser(c.ID, me); err != nil {
		t.Fatal(err)
	}
	if status, _ := call(t, srv, p, "im.dialog.messages.get", body); status != http.StatusOK {
		t.Errorf("after joining again: status %d, want 200", status)
	}
}

func TestIMInBatchWithChainedCursors(t *testing.T) {
	p, srv := start(t, Options{Users: 20, Chats: 10, MessagesPerChat: 70, Seed: 11})
	c := chatsOf(p, "chat", true)[0]
	desc := slices.Clone(c.MessageIDs)
	slices.Reverse(desc)
	body := fmt.Sprintf(`{"halt":1,"cmd":{
		"p0":"im.dialog.messages.get?DIALOG_ID=chat%[1]d&LIMIT=50",
		"p1":"im.dialog.messages.get?DIALOG_ID=chat%[1]d&LIMIT=50&LAST_ID=$result[p0][messages][49][id]",
		"p2":"im.dialog.messages.get?DIALOG_ID=chat%[1]d&LIMIT=50&LAST_ID=$result[p1][messages][49][id]"}}`, c.ID)
	status, out := call(t, srv, p, "batch", body)
	res := resultOf(t, status, out)["result"].(map[string]any)
	var got []int
	for _, key := range []string{"p0", "p1"} {
		got = append(got, messageIDsOf(t, res[key].(map[string]any))...)
	}
	if !slices.Equal(got, desc) {
		t.Errorf("two chained pages read %v\nwant %v", got, desc)
	}
	// The second page had 20 messages, so [49] does not resolve: the
	// reference becomes the page's list, intval of which is 1, and the
	// third page is empty rather than a repeat.
	if third := messageIDsOf(t, res["p2"].(map[string]any)); len(third) != 0 {
		t.Errorf("page past the end: %v, want none", third)
	}
}

func TestIMSameSeedSameData(t *testing.T) {
	dump := func(seed uint64) string {
		p, srv := start(t, Options{Users: 30, Groups: 3, Chats: 20, OpenLines: 1, Seed: seed})
		var b strings.Builder
		_, out := call(t, srv, p, "im.recent.list", `{"LIMIT":200}`)
		enc, _ := json.Marshal(out["result"])
		b.Write(enc)
		for _, c := range p.Chats() {
			if slices.Contains(c.Members, me) {
				_, out := call(t, srv, p, "im.dialog.messages.get", fmt.Sprintf(`{"DIALOG_ID":"chat%d","LIMIT":50}`, c.ID))
				enc, _ := json.Marshal(out["result"])
				b.Write(enc)
			}
		}
		return b.String()
	}
	// Two separately built portals, not one call compared with itself.
	if first, second := dump(7), dump(7); first != second {
		t.Error("two portals with seed 7 differ")
	}
	if dump(7) == dump(8) {
		t.Error("portals with seeds 7 and 8 are identical")
	}
}

func TestLatencyCountsTheMethodsAnAnswerRan(t *testing.T) {
	p, srv := start(t, Options{Users: 5, Seed: 1, CommandLatency: time.Millisecond,
		MethodLatency: map[string]time.Duration{"user.current": 10 * time.Millisecond}})
	tests := []struct {
		method, body string
		wantHeld     time.Duration
	}{
		{"user.get", `{}`, time.Millisecond},
		{"batch", `{"cmd":{"a":"user.get","b":"user.get","c":"user.current"}}`, 12 * time.Millisecond},
		{"no.such.method", `{}`, 0},
	}
	for _, tt := range tests {
		before := p.held
		call(t, srv, p, tt.method, tt.body)
		if held := p.held - before; held != tt.wantHeld {
			t.Errorf("%s held its answer %v, want %v", tt.method, held, tt.wantHeld)
		}
	}
}
