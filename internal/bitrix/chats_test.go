package bitrix_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/status"
)

// webhookUser is the fake portal's webhook user, whose chats are the ones readable.
const webhookUser = 1

// chatEnv is an env whose users and workgroups are migrated and verified, ready for chats.
func chatEnv(t *testing.T, opts bitrixfake.Options) (*env, *engine.Engine) {
	t.Helper()
	v := newEnv(t, opts)
	e := v.engine(chatRetry)
	v.migrateUsers(e)
	if opts.Groups > 0 {
		v.phases(e, bitrix.Groups, "get", "set", "verify")
	}
	return v, e
}

// chatRetry is chatEnv's retry schedule: the real one's steps in milliseconds.
func chatRetry(c *engine.Config) {
	c.RetryPolicy = retry.Policy{Delays: []time.Duration{0, time.Millisecond, time.Millisecond}}
}

// portalChats splits the portal's chats into those the webhook user can read and those it
// cannot.
func portalChats(p *bitrixfake.Portal) (readable, closed []bitrixfake.Chat) {
	for _, c := range p.Chats() {
		if slices.Contains(c.Members, webhookUser) || c.Type == "open" {
			readable = append(readable, c)
		} else {
			closed = append(closed, c)
		}
	}
	return readable, closed
}

func messageCount(chats []bitrixfake.Chat) int {
	n := 0
	for _, c := range chats {
		n += len(c.MessageIDs)
	}
	return n
}

func TestChatsRunEndToEnd(t *testing.T) {
	t.Parallel()
	v, e := chatEnv(t, bitrixfake.Options{Users: 40, Groups: 10, Chats: 40, MessagesPerChat: 30, Seed: 21})
	readable, closed := portalChats(v.portal)
	if len(closed) == 0 {
		t.Fatal("the portal should have workgroup chats the webhook user is not in")
	}
	if err := e.Run(v.ctx, bitrix.Chats); err != nil {
		t.Fatalf("chats run: %v", err)
	}
	messages := messageCount(readable)
	tests := []struct {
		name string
		sql  string
		want int
	}{
		{"readable chats imported", `SELECT count(*) FROM bitrix_records WHERE entity = 'chats' AND status = 'IMPORT_OK'`, len(readable)},
		{"closed chats kept with the reason", `SELECT count(*) FROM bitrix_records WHERE entity = 'chats' AND status = 'IMPORT_ERR'
AND last_error LIKE 'out of reach: im.dialog.get refused with ACCESS_ERROR%'`, len(closed)},
		{"messages imported", `SELECT count(*) FROM bitrix_records WHERE entity = 'chat_messages' AND status = 'IMPORT_OK'`, messages},
		{"every message keyed <chat>:<message>", `SELECT count(*) FROM bitrix_records WHERE entity = 'chat_messages'
AND source_id = parent_source_id || ':' || (payload->>'id')`, messages},
		{"messages mapped", `SELECT count(*) FROM bitrix_id_map WHERE entity = 'chat_messages'`, messages},
	}
	for _, tt := range tests {
		if got := v.count(tt.sql); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	if got := v.target.Count(bitrix.ChatMessages); got != messages {
		t.Errorf("target holds %d messages, want %d", got, messages)
	}
	if st := v.target.Stats(); st.Duplicates != 0 {
		t.Errorf("%d duplicates on the target", st.Duplicates)
	}

	r, err := e.Verify(v.ctx, bitrix.Chats)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() {
		t.Errorf("verify: %s", r.Summary())
	}
	if r.UnreachableCount != len(closed) || len(r.Unreachable) != len(closed) {
		t.Errorf("verify lists %d unreachable chats (count %d), want %d", len(r.Unreachable), r.UnreachableCount, len(closed))
	}
	for _, u := range r.Unreachable {
		if !strings.Contains(u.Reason, "ACCESS_ERROR") {
			t.Errorf("unreachable chat %s: reason %q does not say why", u.SourceID, u.Reason)
		}
	}
	if len(r.References) != 1 || r.References[0].Field != "participants" || r.References[0].Total == 0 ||
		r.References[0].Mapped != r.References[0].Total {
		t.Errorf("participants coverage %+v, want every participant mapped", r.References)
	}
	if m, ok := r.Child(bitrix.ChatMessages); !ok || m.Source != int64(messages) || m.Read != int64(messages) ||
		m.Target != int64(messages) || len(m.Short) != 0 {
		t.Errorf("message counts %+v, want %d on the portal, read and on the target", m, messages)
	}
	if !strings.Contains(r.Summary(), fmt.Sprintf("%d messages on target of %d read", messages, messages)) {
		t.Errorf("summary %q does not count the messages", r.Summary())
	}
	if r.Sampled == 0 || !strings.Contains(r.Summary(), fmt.Sprintf("%d chats out of the webhook user's reach", len(closed))) {
		t.Errorf("summary %q", r.Summary())
	}

	for name, want := range map[string]float64{
		`records_extracted_total{entity=chats}`:         float64(len(readable) + len(closed)),
		`records_extracted_total{entity=chat_messages}`: float64(messages),
		`records_import_ok_total{entity=chats}`:         float64(len(readable)),
		`records_import_ok_total{entity=chat_messages}`: float64(messages),
	} {
		if got := v.metric(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for _, phase := range []string{"get", "set", "verify"} {
		if _, ok := v.metrics.Snapshot()[`duration_ms{entity=chats,phase=`+phase+`}`]; !ok {
			t.Errorf("no duration_ms for chats %s", phase)
		}
	}
	if got := v.source.Stats().QueryLimit; got != 0 {
		t.Errorf("%d QUERY_LIMIT_EXCEEDED answers", got)
	}
}

func TestChatsOverlappingRecentPagesAreDeduplicated(t *testing.T) {
	t.Parallel()
	// More chats than one page of 200 holds, so the recent list comes in pages that overlap.
	v, e := chatEnv(t, bitrixfake.Options{Users: 400, Chats: 450, MessagesPerChat: 1, Seed: 22})
	readable, _ := portalChats(v.portal)
	st, err := e.Get(v.ctx, bitrix.Chats)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.Of(bitrix.Chats); c.Rows != len(readable) || c.Inserted != len(readable) {
		t.Errorf("stats %+v, want %d chats found and stored once each", st, len(readable))
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'chats'`); n != len(readable) {
		t.Errorf("%d chat records, want %d", n, len(readable))
	}
	// The pages listed more items than there are chats: the overlap was there, and was dropped.
	listed := v.count(`SELECT sum(count) FROM bitrix_page_log WHERE entity = 'chats' AND cursor LIKE 'recent %'`)
	if listed <= len(readable) {
		t.Errorf("the recent pages listed %d items for %d chats; the fake should make them overlap", listed, len(readable))
	}
	if v.portal.Stats().Calls["im.recent.list"] < 3 {
		t.Errorf("im.recent.list called %d times, want every page", v.portal.Stats().Calls["im.recent.list"])
	}
}

// killAfter cancels the run when the portal is sent more than n batches of message reads: the
// batch in flight and the transactions storing answers fail as in a killed process.
type killAfter struct {
	*rest.Client
	n       int32
	batches atomic.Int32
	cancel  context.CancelFunc
}

func (k *killAfter) Batch(ctx context.Context, cmds []rest.Command, halt bool) (*rest.BatchResult, error) {
	if cmds[0].Method == "im.dialog.messages.get" && k.batches.Add(1) > k.n {
		k.cancel()
	}
	return k.Client.Batch(ctx, cmds, halt)
}

func TestChatsGetResumesEachChatAfterAKill(t *testing.T) {
	t.Parallel()
	v, e := chatEnv(t, bitrixfake.Options{Users: 40, Chats: 80, MessagesPerChat: 130, Seed: 23})
	readable, _ := portalChats(v.portal)
	ctx, cancel := context.WithCancel(v.ctx)
	killed := v.engine(chatRetry, func(c *engine.Config) {
		c.Concurrency = 2
		c.Source = &killAfter{Client: v.source, n: 3, cancel: cancel}
	})
	if _, err := killed.Get(ctx, bitrix.Chats); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed get: %v, want context.Canceled", err)
	}
	partial := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'chat_messages'`)
	if partial == 0 || partial >= messageCount(readable) {
		t.Fatalf("%d messages stored before the kill; the kill should land mid-walk", partial)
	}

	st, err := e.Get(v.ctx, bitrix.Chats)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Resumed || st.Pass != 1 {
		t.Errorf("stats %+v, want the interrupted pass 1 resumed", st)
	}
	if got := st.Of(bitrix.ChatMessages).Inserted; got != messageCount(readable)-partial {
		t.Errorf("resumed get stored %d new messages, want the %d missing", got, messageCount(readable)-partial)
	}
	for _, c := range readable {
		var got []int
		rows, err := v.pool.Query(v.ctx, `SELECT split_part(source_id, ':', 2)::int FROM bitrix_records
WHERE entity = 'chat_messages' AND parent_source_id = $1 ORDER BY 1`, strconv.Itoa(c.ID))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			got = append(got, id)
		}
		if !slices.Equal(got, c.MessageIDs) {
			t.Fatalf("chat %d: stored %d messages, want its %d", c.ID, len(got), len(c.MessageIDs))
		}
	}
	// Resuming went on from each chat's cursor: no page was read (and logged) twice, and no
	// chat's walk started from the newest message twice.
	if n := v.count(`SELECT count(*) FROM (SELECT cursor FROM bitrix_page_log WHERE entity = 'chat_messages'
GROUP BY cursor HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d pages were read twice", n)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_page_log WHERE entity = 'chat_messages' AND next_cursor LIKE '% done'`); n != len(readable) {
		t.Errorf("%d chats read to their start, want %d", n, len(readable))
	}
}

func TestChatsEditedMessageIsFoundByItsHash(t *testing.T) {
	t.Parallel()
	v, e := chatEnv(t, bitrixfake.Options{Users: 20, Chats: 8, MessagesPerChat: 60, Seed: 24})
	v.phases(e, bitrix.Chats, "get", "set", "verify")
	readable, _ := portalChats(v.portal)
	total := messageCount(readable)
	chat := readable[0]
	edited := chat.MessageIDs[10]
	editedKey := fmt.Sprintf("%d:%d", chat.ID, edited)
	if err := v.portal.EditMessage(edited, "текст после правки, [USER=2]коллега[/USER]"); err != nil {
		t.Fatal(err)
	}
	added, err := v.portal.AddMessage(chat.ID, webhookUser, "новое сообщение")
	if err != nil {
		t.Fatal(err)
	}

	// A later get only tops up with FIRST_ID, and only the chat whose last message (as the
	// listing shows it) is not stored: one command, the new message found, the old ones not
	// read again.
	before := v.portal.Stats().Calls["im.dialog.messages.get"]
	st, err := e.Get(v.ctx, bitrix.Chats)
	if err != nil {
		t.Fatal(err)
	}
	if calls := v.portal.Stats().Calls["im.dialog.messages.get"] - before; calls != 1 {
		t.Errorf("top-up made %d message calls, want one, for the chat with a new message", calls)
	}
	if c := st.Of(bitrix.ChatMessages); c.Inserted != 1 || c.Changed != 0 || c.Rows != 1 {
		t.Errorf("top-up stats %+v, want the one new message", st)
	}
	if r := v.record(bitrix.ChatMessages, fmt.Sprintf("%d:%d", chat.ID, added)); r.Status != engine.StatusNew {
		t.Errorf("new message is %s, want NEW", r.Status)
	}

	// A rescan reads every history again: the edited message's hash changed, nothing else did.
	e = v.engine(chatRetry, func(c *engine.Config) { c.Registry = bitrix.Catalog(bitrix.ChatRescan(true)) })
	st, err = e.Get(v.ctx, bitrix.Chats)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.Of(bitrix.ChatMessages); c.Changed != 1 || c.Inserted != 0 || c.Unchanged != total {
		t.Errorf("rescan stats %+v, want 1 changed and %d unchanged", st, total)
	}
	if r := v.record(bitrix.ChatMessages, editedKey); r.Status != engine.StatusNew {
		t.Errorf("edited message is %s, want NEW", r.Status)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'chat_messages' AND status = 'IMPORT_OK'`); n != total-1 {
		t.Errorf("%d messages still IMPORT_OK, want all %d but the edited one", n, total-1)
	}

	v.phases(e, bitrix.Chats, "set", "verify")
	got, ok := v.target.Lookup(bitrix.ChatMessages, "source:chat_messages:"+editedKey)
	if !ok {
		t.Fatal("edited message missing on the target")
	}
	var payload struct {
		Text   string `json:"text"`
		Edited bool   `json:"edited"`
	}
	if err := json.Unmarshal(got.Payload, &payload); err != nil {
		t.Fatal(err)
	}
	var user2 string
	if err := v.pool.QueryRow(v.ctx, `SELECT target_id FROM bitrix_id_map WHERE entity = 'users' AND source_id = '2'`).Scan(&user2); err != nil {
		t.Fatal(err)
	}
	if want := "текст после правки, [USER=" + user2 + "]коллега[/USER]"; !payload.Edited || payload.Text != want {
		t.Errorf("target has %+v, want the new text %q, the mention mapped to user 2's target id", payload, want)
	}
	if st := v.target.Stats(); st.Updated != 1 || st.Duplicates != 0 {
		t.Errorf("target stats %+v, want the edited message updated in place", st)
	}
}

// orderedTarget checks, as the target, that no message arrives before its chat was imported
// and that each chat's messages arrive in id order.
type orderedTarget struct {
	engine.Target
	t        *testing.T
	mu       sync.Mutex
	imported map[string]bool // chat source ids
	last     map[string]int  // chat -> last message id sent
}

func (o *orderedTarget) Import(ctx context.Context, entity string, items []importapi.Item) ([]importapi.Result, error) {
	o.mu.Lock()
	for _, it := range items {
		if entity != bitrix.ChatMessages {
			continue
		}
		chat, msg, _ := strings.Cut(strings.TrimPrefix(it.Key, "source:chat_messages:"), ":")
		id, _ := strconv.Atoi(msg)
		if !o.imported[chat] {
			o.t.Errorf("message %s sent before its chat was imported", it.Key)
		}
		if id <= o.last[chat] {
			o.t.Errorf("message %s sent after message %d of the same chat", it.Key, o.last[chat])
		}
		o.last[chat] = id
	}
	o.mu.Unlock()
	results, err := o.Target.Import(ctx, entity, items)
	if entity == bitrix.Chats && err == nil {
		o.mu.Lock()
		for _, r := range results {
			if r.Error == nil {
				o.imported[strings.TrimPrefix(r.Key, "source:chats:")] = true
			}
		}
		o.mu.Unlock()
	}
	return results, err
}

func TestChatMessagesAreNeverImportedBeforeTheirChat(t *testing.T) {
	t.Parallel()
	v, _ := chatEnv(t, bitrixfake.Options{Users: 30, Chats: 25, MessagesPerChat: 60, Seed: 25})
	readable, _ := portalChats(v.portal)
	rejected := readable[3]
	v.target.RejectKey(bitrix.Chats, "source:chats:"+strconv.Itoa(rejected.ID), "chat quota exceeded")
	v.target.FailItems(bitrix.Chats, 5) // retried: their messages must wait for the retry
	e := v.engine(chatRetry, func(c *engine.Config) {
		c.Target = &orderedTarget{Target: v.client, t: t, imported: map[string]bool{}, last: map[string]int{}}
	})

	v.phases(e, bitrix.Chats, "get")
	st, err := e.Set(v.ctx, bitrix.Chats)
	if err != nil {
		t.Fatal(err)
	}
	if r := v.record(bitrix.Chats, strconv.Itoa(rejected.ID)); r.Status != engine.ImportErr || !strings.Contains(r.LastError, "chat quota exceeded") {
		t.Errorf("rejected chat is %s (%q), want IMPORT_ERR with the target's reason", r.Status, r.LastError)
	}
	if got, want := st[bitrix.ChatMessages].Waiting, int64(len(rejected.MessageIDs)); got != want {
		t.Errorf("%d messages waiting, want the rejected chat's %d", got, want)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'chat_messages' AND parent_source_id = $1 AND status = 'NEW'`,
		strconv.Itoa(rejected.ID)); n != len(rejected.MessageIDs) {
		t.Errorf("%d of the rejected chat's messages are NEW, want all %d", n, len(rejected.MessageIDs))
	}
	if got, want := v.target.Count(bitrix.ChatMessages), messageCount(readable)-len(rejected.MessageIDs); got != want {
		t.Errorf("target holds %d messages, want %d", got, want)
	}
	if st[bitrix.Chats].Retries == 0 {
		t.Error("no chat was retried; FailItems should have made some retryable failures")
	}

	r, err := e.Verify(v.ctx, bitrix.Chats)
	if err != nil {
		t.Fatal(err)
	}
	if r.Clean() || len(r.NotImported) != 1 || r.NotImported[0].SourceID != strconv.Itoa(rejected.ID) {
		t.Errorf("verify: %s; not imported %+v, want the rejected chat listed", r.Summary(), r.NotImported)
	}
}

func TestChatsVerifyReportsUnmappedParticipants(t *testing.T) {
	t.Parallel()
	const stranger = 999_999 // not a user of the portal's user.get: a bot, say
	tests := []struct {
		name  string
		opts  bitrixfake.Options
		setup func(*env) // after a first clean migration; nil: no first migration
		chat  func(*env) bitrixfake.Chat
		user  string
	}{
		{
			name: "someone who is not a portal user joins a chat",
			opts: bitrixfake.Options{Users: 20, Chats: 6, Seed: 26},
			setup: func(v *env) {
				c := v.firstChat("chat")
				if err := v.portal.AddChatUser(c.ID, stranger); err != nil {
					v.t.Fatal(err)
				}
			},
			chat: func(v *env) bitrixfake.Chat { return v.firstChat("chat") },
			user: strconv.Itoa(stranger),
		},
		{
			name: "an Open Channel guest",
			opts: bitrixfake.Options{Users: 20, Chats: 4, OpenLines: 1, Seed: 27},
			chat: func(v *env) bitrixfake.Chat { return v.firstChat("lines") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, e := chatEnv(t, tt.opts)
			if tt.setup != nil {
				v.phases(e, bitrix.Chats, "get", "set", "verify")
				tt.setup(v)
			}
			v.phases(e, bitrix.Chats, "get", "set")
			chat := tt.chat(v)
			user := tt.user
			if user == "" { // the guest: the member user.get does not know
				users := v.portal.UserIDs()
				for _, m := range chat.Members {
					if !slices.Contains(users, m) {
						user = strconv.Itoa(m)
					}
				}
			}
			r, err := e.Verify(v.ctx, bitrix.Chats)
			if err != nil {
				t.Fatal(err)
			}
			want := []engine.UnmappedRefs{{SourceID: strconv.Itoa(chat.ID), Values: []string{user}}}
			if r.Clean() || len(r.References) != 1 || !slices.EqualFunc(r.References[0].Unmapped, want, func(a, b engine.UnmappedRefs) bool {
				return a.SourceID == b.SourceID && slices.Equal(a.Values, b.Values)
			}) {
				t.Errorf("verify: %s; references %+v, want unmapped %+v", r.Summary(), r.References, want)
			}
			if !strings.Contains(r.Summary(), "1 of") || !strings.Contains(r.Summary(), "participants have no target id") {
				t.Errorf("summary %q does not name the unmapped participant", r.Summary())
			}
			if rec := v.record(bitrix.Chats, strconv.Itoa(chat.ID)); rec.Status != engine.ImportErr || !strings.Contains(rec.LastError, user) {
				t.Errorf("chat %d is %s (%q), want IMPORT_ERR naming user %s", chat.ID, rec.Status, rec.LastError, user)
			}
		})
	}
}

// firstChat returns the portal's first readable chat of a type.
func (v *env) firstChat(typ string) bitrixfake.Chat {
	v.t.Helper()
	readable, _ := portalChats(v.portal)
	for _, c := range readable {
		if c.Type == typ {
			return c
		}
	}
	v.t.Fatalf("no readable %s chat", typ)
	return bitrixfake.Chat{}
}

func TestChatsOutOfReachAreReportedNotLost(t *testing.T) {
	t.Parallel()
	v, e := chatEnv(t, bitrixfake.Options{Users: 30, Groups: 12, Chats: 10, MessagesPerChat: 30, Seed: 28})
	v.phases(e, bitrix.Chats, "get", "set", "verify")
	_, closed := portalChats(v.portal)

	// The webhook user leaves a chat that was read and imported: the next get finds the
	// refusal, and the chat joins the ones out of reach instead of vanishing.
	left := v.firstChat("chat")
	if err := v.portal.RemoveChatUser(left.ID, webhookUser); err != nil {
		t.Fatal(err)
	}
	st, err := e.Get(v.ctx, bitrix.Chats)
	if err != nil {
		t.Fatal(err)
	}
	if st.Unreachable != len(closed)+1 {
		t.Errorf("get found %d chats out of reach, want %d", st.Unreachable, len(closed)+1)
	}
	r, err := e.Verify(v.ctx, bitrix.Chats)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, u := range r.Unreachable {
		ids = append(ids, u.SourceID)
		if !strings.Contains(u.Reason, "ACCESS_ERROR") || !strings.Contains(u.Reason, "not a participant") {
			t.Errorf("chat %s: reason %q", u.SourceID, u.Reason)
		}
	}
	want := []string{strconv.Itoa(left.ID)}
	for _, c := range closed {
		want = append(want, strconv.Itoa(c.ID))
	}
	slices.Sort(ids)
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("verify lists %v out of reach, want %v", ids, want)
	}
	// It was imported before, so the target now holds one chat more than can be read.
	if r.Clean() || !strings.Contains(r.Summary(), fmt.Sprintf("expected %d", r.Expected)) {
		t.Errorf("verify: %s", r.Summary())
	}
	rep, err := e.Report(v.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, es := range rep.Entities {
		if es.Entity == bitrix.Chats && es.ByStatus["IMPORT_ERR"] != int64(len(want)) {
			t.Errorf("status shows %d chats in IMPORT_ERR, want %d", es.ByStatus["IMPORT_ERR"], len(want))
		}
	}
}

func TestChatsGetPacksCursorCallsIntoBatches(t *testing.T) {
	t.Parallel()
	const chats, perChat = 50, 120 // pages of 50, 50, 20 per chat
	v, _ := chatEnv(t, bitrixfake.Options{Users: 200, Chats: chats, MessagesPerChat: perChat, Seed: 29})
	e := v.engine(chatRetry, func(c *engine.Config) { c.Concurrency = 1 })
	before := v.portal.Stats()
	if _, err := e.Get(v.ctx, bitrix.Chats); err != nil {
		t.Fatal(err)
	}
	after := v.portal.Stats()
	// One recent-list page (200 per page), participants 50 chats per batch, then 300 pages of
	// messages 50 per batch: the first page of every chat, then the second, then the third.
	want := 1 + chats/50 + chats*3/50
	if got := after.Requests - before.Requests; got != want {
		t.Errorf("%d HTTP requests, want %d", got, want)
	}
	if got := after.Calls["im.dialog.messages.get"] - before.Calls["im.dialog.messages.get"]; got != chats*3 {
		t.Errorf("%d message reads, want %d", got, chats*3)
	}
}

func TestChatsSetRequiresVerifiedUsers(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 10, Chats: 3, Seed: 30})
	e := v.engine()
	if _, err := e.Get(v.ctx, bitrix.Chats); err != nil {
		t.Fatal(err)
	}
	_, err := e.Set(v.ctx, bitrix.Chats)
	if !errors.Is(err, engine.ErrPrerequisite) || !strings.Contains(err.Error(), "users") {
		t.Errorf("chats set before users: %v, want a prerequisite error naming users", err)
	}
	if v.target.Count(bitrix.Chats) != 0 {
		t.Error("chats reached the target")
	}
}

// A chat that cannot be migrated (an Open Channel conversation with an external guest, who is no
// portal user) keeps verify from passing until a person acknowledges it; then verify passes and
// lists it apart, with who and why, and its messages as waiting for it. A new failure of the
// same record (after a person sends it back) needs a new acknowledgement.
func TestChatsVerifyPassesOnAcknowledgedExceptions(t *testing.T) {
	t.Parallel()
	v, e := chatEnv(t, bitrixfake.Options{Users: 30, Groups: 0, Chats: 20, OpenLines: 2, MessagesPerChat: 10, Seed: 33})
	if err := e.Run(v.ctx, bitrix.Chats); !errors.Is(err, engine.ErrNotVerified) {
		t.Fatalf("chats run = %v, want ErrNotVerified over the Open Channel chats", err)
	}
	rows, err := v.pool.Query(v.ctx, `SELECT id FROM bitrix_records WHERE entity = 'chats' AND status = 'IMPORT_ERR'`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) != 2 {
		t.Fatalf("%d chats in IMPORT_ERR (%v), want the 2 Open Channel chats", len(ids), err)
	}
	if _, err := engine.Machine.Acknowledge(v.ctx, v.pool, ids, "guests live in the CRM, not the portal", "manual: alice"); err != nil {
		t.Fatal(err)
	}
	r, err := e.Verify(v.ctx, bitrix.Chats)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() {
		t.Fatalf("verify after acknowledging: %s", r.Summary())
	}
	if r.AcknowledgedCount != 2 || len(r.Acknowledged) != 2 || r.Acknowledged[0].AcknowledgedBy != "manual: alice" ||
		r.Acknowledged[0].AcknowledgedReason != "guests live in the CRM, not the portal" || r.AcknowledgedWaiting != 20 {
		t.Errorf("acknowledged %d %+v, %d waiting; want the 2 chats by alice and their 20 messages",
			r.AcknowledgedCount, r.Acknowledged, r.AcknowledgedWaiting)
	}
	if !v.inventory(bitrix.Chats).Verified {
		t.Error("chats not VERIFIED after a clean verify")
	}
	// Sent back by a person, the chat fails again: the old acknowledgement does not cover it.
	if _, err := engine.Machine.MoveMany(v.ctx, v.pool, ids[:1], engine.ImportErr, engine.StatusNew,
		status.Change{Actor: "manual: bob", Manual: true, Reason: "try again"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Set(v.ctx, bitrix.Chats); err != nil {
		t.Fatal(err)
	}
	if r, err = e.Verify(v.ctx, bitrix.Chats); err != nil || r.Clean() {
		t.Errorf("verify after the chat failed again: clean %v (%v), want a problem", r.Clean(), err)
	}
}
