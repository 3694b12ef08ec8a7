package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/status"
)

const (
	// messagesLimit is im.dialog.messages.get's largest page; a shorter page is a chat's last.
	messagesLimit = 50
	// maxChain is how many pages of one chat a batch may chain when few chats are left: page
	// k+1 asks for the messages older than page k's 50th through a $result reference.
	maxChain = 8
)

// chatCursor is where the reading of one chat's messages stands. Walking back, the next page is
// the messages older than before (0: the newest); topping up, those newer than after.
type chatCursor struct {
	chat    int64
	forward bool
	before  int64
	after   int64
	done    bool
	tries   int // commands the portal refused for its operating-time limit
}

// text is the cursor as the page log keeps it: "chat15 LAST_ID=84000", "chat15 FIRST_ID=84400",
// or "chat15 done".
func (c *chatCursor) text() string {
	switch {
	case c.done:
		return fmt.Sprintf("chat%d done", c.chat)
	case c.forward:
		return fmt.Sprintf("chat%d FIRST_ID=%d", c.chat, c.after)
	}
	return fmt.Sprintf("chat%d LAST_ID=%d", c.chat, c.before)
}

// parseCursor reads a page log cursor back; ok is false for text that is not one.
func parseCursor(s string) (c chatCursor, ok bool) {
	chat, pos, found := strings.Cut(s, " ")
	id, err := strconv.ParseInt(strings.TrimPrefix(chat, "chat"), 10, 64)
	if !found || err != nil || !strings.HasPrefix(chat, "chat") {
		return c, false
	}
	c.chat = id
	name, value, _ := strings.Cut(pos, "=")
	n, err := strconv.ParseInt(value, 10, 64)
	switch {
	case pos == "done":
		c.done = true
	case name == "LAST_ID" && err == nil:
		c.before = n
	case name == "FIRST_ID" && err == nil:
		c.forward, c.after = true, n
	default:
		return c, false
	}
	return c, true
}

// params are the cursor as im.dialog.messages.get parameters.
func (c *chatCursor) params() map[string]any {
	p := map[string]any{"DIALOG_ID": "chat" + strconv.FormatInt(c.chat, 10), "LIMIT": messagesLimit}
	if c.forward {
		p["FIRST_ID"] = c.after
	} else if c.before > 0 {
		p["LAST_ID"] = c.before
	}
	return p
}

// walkMessages reads the messages of every readable chat stored, resuming an interrupted pass
// chat by chat from the page log.
func (e *Engine) walkMessages(ctx context.Context, zone *time.Location, st *GetStats) error {
	inv, err := loadInventory(ctx, e.Pool, ChatMessages)
	if err != nil {
		return err
	}
	st.Resumed = inv.Pass > 0 && !inv.Complete
	if !st.Resumed {
		if inv, err = startPass(ctx, e.Pool, ChatMessages, 0); err != nil {
			return err
		}
	}
	st.Pass = inv.Pass
	queue, err := e.chatCursors(ctx, inv.Pass)
	if err != nil {
		return err
	}
	e.Log.Info("reading chat messages", "entity", ChatMessages, "pass", inv.Pass, "resumed", st.Resumed,
		"chats", len(queue), "rescan", e.ChatRescan)
	w := &walker{e: e, ent: e.entity(ChatMessages), pass: inv.Pass, zone: zone, st: st, queue: queue, start: e.now(),
		parentOf: func(chat int64) string { return strconv.FormatInt(chat, 10) },
		lost: func(ctx context.Context, tx pgx.Tx, chat int64, u *Unreachable) error {
			return e.markUnreachable(ctx, tx, chat, u, zone)
		}}
	if err := w.run(ctx); err != nil {
		return err
	}
	var stored int64
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM bitrix_records WHERE entity = 'chat_messages'`).Scan(&stored); err != nil {
		return fmt.Errorf("count chat messages: %w", err)
	}
	return finishPass(ctx, e.Pool, ChatMessages, stored)
}

// chatCursors decides where each readable chat's reading starts in this pass: a chat the pass
// already finished is left out; a walk cut short (in this pass or an earlier one) goes on from
// its last logged page; a chat read to its start before is topped up from its newest stored
// message, or, with ChatRescan, read again from the newest; any other starts at the newest.
func (e *Engine) chatCursors(ctx context.Context, pass int) ([]*chatCursor, error) {
	chats, err := storedChats(ctx, e.Pool)
	if err != nil {
		return nil, err
	}
	newest := map[int64]int64{}
	rows, err := e.Pool.Query(ctx, `SELECT parent_source_id::bigint, max(split_part(source_id, ':', 2)::bigint)
FROM bitrix_records WHERE entity = 'chat_messages' GROUP BY 1`)
	if err != nil {
		return nil, fmt.Errorf("find the newest stored messages: %w", err)
	}
	var chat, id int64
	_, err = pgx.ForEachRow(rows, []any{&chat, &id}, func() error {
		newest[chat] = id
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find the newest stored messages: %w", err)
	}
	var readable []int64
	for _, ch := range chats {
		if ch.Unreachable == nil {
			readable = append(readable, ch.ID)
		}
	}
	return e.cursorsOf(ctx, ChatMessages, pass, readable, newest)
}

// cursorsOf decides where the reading of each of the chats starts in this pass of the entity
// whose records their messages become (chat_messages, task_comments), from that entity's page log
// and the newest message stored of each chat (see chatCursors).
func (e *Engine) cursorsOf(ctx context.Context, entity string, pass int, chats []int64, newest map[int64]int64) ([]*chatCursor, error) {
	type logged struct {
		pass int
		at   chatCursor
	}
	latest := map[int64]logged{}
	rows, err := e.Pool.Query(ctx, `SELECT DISTINCT ON (split_part(cursor, ' ', 1)) pass, next_cursor FROM bitrix_page_log
WHERE entity = $1 ORDER BY split_part(cursor, ' ', 1), id DESC`, entity)
	if err != nil {
		return nil, fmt.Errorf("load chat cursors: %w", err)
	}
	var p int
	var next string
	_, err = pgx.ForEachRow(rows, []any{&p, &next}, func() error {
		if c, ok := parseCursor(next); ok {
			latest[c.chat] = logged{p, c}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load chat cursors: %w", err)
	}
	var out []*chatCursor
	for _, id := range chats {
		l, ok := latest[id]
		c := chatCursor{chat: id}
		switch {
		case ok && l.pass == pass && l.at.done:
			continue
		case ok && l.pass == pass, ok && !l.at.done && !e.ChatRescan:
			c = l.at
		case !e.ChatRescan && newest[id] > 0:
			c.forward, c.after = true, newest[id]
		}
		out = append(out, &c)
	}
	slices.SortFunc(out, func(a, b *chatCursor) int { return int(a.chat - b.chat) })
	return out, nil
}

// walker works a queue of chats with a fixed number of workers. Each worker takes the next
// chats, one command each (or a chain of several when few chats are left, so a batch is still
// full), reads them in one batch, stores the pages and puts back the chats not finished.
type walker struct {
	e *Engine
	// ent is the entity the messages become (chat_messages, task_comments); parentOf gives a
	// chat's parent record there (the chat, the task); lost records a chat that can no longer
	// be read.
	ent      *Entity
	parentOf func(chat int64) string
	lost     func(ctx context.Context, tx pgx.Tx, chat int64, u *Unreachable) error
	pass     int
	zone     *time.Location
	start    time.Time

	queue []*chatCursor // touched by the pool's next and ended only

	mu sync.Mutex // guards st, written by the jobs
	st *GetStats
}

// walkJob is the chats one batch reads, and how many pages of each.
type walkJob struct {
	chats []*chatCursor
	pages []int
}

func (w *walker) run(ctx context.Context) error {
	return runPool(ctx, w.e.concurrency(), w.take, w.read, func(job *walkJob) {
		w.queue = requeue(w.queue, job.chats, func(c *chatCursor) bool { return c.done })
	})
}

// take returns the next job: the next chats, one command each, or a chain of several when few
// chats are left, so a batch is still full.
func (w *walker) take(context.Context) (*walkJob, bool, error) {
	if len(w.queue) == 0 {
		return nil, false, nil
	}
	chain := min(max(rest.MaxBatch/len(w.queue), 1), maxChain)
	job := &walkJob{}
	for cmds := 0; len(w.queue) > 0 && cmds < rest.MaxBatch; {
		c := w.queue[0]
		w.queue = w.queue[1:]
		pages := 1
		if !c.forward { // FIRST_ID's order is undocumented, so only walks back are chained
			pages = min(chain, rest.MaxBatch-cmds)
		}
		job.chats, job.pages = append(job.chats, c), append(job.pages, pages)
		cmds += pages
	}
	return job, true, nil
}

// read runs one job: one batch, then every page it brought stored with its page log row in one
// transaction, so the cursors in the log never run ahead of the messages stored.
func (w *walker) read(ctx context.Context, job *walkJob) error {
	var cmds []rest.Command
	for i, c := range job.chats {
		for j := range job.pages[i] {
			params := c.params()
			if j > 0 { // older than the 50th (the oldest) message of the page before
				params["LAST_ID"] = rest.Ref(pageKey(c.chat, j-1), "messages", strconv.Itoa(messagesLimit-1), "id")
			}
			cmds = append(cmds, rest.Command{Key: pageKey(c.chat, j), Method: "im.dialog.messages.get", Params: params})
		}
	}
	br, err := w.e.Source.Batch(ctx, cmds, false)
	if err != nil {
		return err
	}
	var recs []incoming
	var pages []pageRecord
	lost := map[int64]*Unreachable{}
	for i, c := range job.chats {
		got, logged, err := w.chatPages(br, c, job.pages[i], lost)
		if err != nil {
			return err
		}
		recs, pages = append(recs, got...), append(pages, logged...)
	}
	recs = uniqueIncoming(recs)

	var got saved
	err = pgx.BeginFunc(ctx, w.e.Pool, func(tx pgx.Tx) error {
		var err error
		change := status.Change{Reason: "changed on the source (edited)", Actor: w.e.Actor, RunID: w.e.RunID}
		if got, err = saveRecords(ctx, tx, w.ent.Name, recs, change); err != nil {
			return err
		}
		for _, p := range pages {
			if err := logPage(ctx, tx, w.ent.Name, w.e.RunID, p); err != nil {
				return err
			}
		}
		for _, chat := range slices.Sorted(maps.Keys(lost)) {
			if err := w.lost(ctx, tx, chat, lost[chat]); err != nil {
				return err
			}
		}
		if got.inserted+got.changed > 0 || len(lost) > 0 {
			return unverify(ctx, tx, verifiedAs(w.e.registry(), w.ent))
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.e.Metrics.RecordsExtracted.WithLabelValues(w.ent.Name).Add(float64(len(recs)))

	w.mu.Lock()
	defer w.mu.Unlock()
	w.st.Pages += len(pages)
	w.st.add(w.ent.Name, len(recs), got)
	w.st.Unreachable += len(lost)
	read := w.st.Of(w.ent.Name).Rows
	w.e.progress("get", w.ent.Name, int64(read), nil, read, w.start)
	return nil
}

func pageKey(chat int64, page int) string { return fmt.Sprintf("m%d_%d", chat, page) }

// chatPages takes one chat's pages out of a batch's answer and moves its cursor past them. A
// chain stops at the first short page (the chat's start or end is reached) or failed command:
// the pages after it asked with a reference that did not resolve. A refusal of the chat's first
// page means the chat can no longer be read: it goes into lost.
func (w *walker) chatPages(br *rest.BatchResult, c *chatCursor, pages int, lost map[int64]*Unreachable) ([]incoming, []pageRecord, error) {
	var recs []incoming
	var logged []pageRecord
	for j := range pages {
		r, err := br.Response(pageKey(c.chat, j))
		if err != nil {
			if j > 0 {
				break
			}
			if u, ok := unreachableFrom("im.dialog.messages.get", err); ok {
				lost[c.chat], c.done = u, true
				break
			}
			if rest.HasCode(err, rest.CodeOperationTimeLimit) && c.tries < maxCommandRetries {
				c.tries++ // the client pauses the method; the chat is read again after the pause
				break
			}
			return nil, nil, fmt.Errorf("messages of chat %d: %w", c.chat, err)
		}
		msgs, ids, err := w.decodePage(c.chat, r)
		if err != nil {
			return nil, nil, err
		}
		if j > 0 && len(ids) > 0 && ids[len(ids)-1] >= c.before {
			break // the reference did not give this chat's cursor: read on from it next time
		}
		from := c.text()
		switch {
		case c.forward && len(ids) > 0:
			c.after = ids[len(ids)-1]
		case !c.forward && len(ids) > 0:
			c.before = ids[0]
		}
		c.done = len(ids) < messagesLimit
		recs = append(recs, msgs...)
		logged = append(logged, pageRecord{pass: w.pass, cursor: from, next: c.text(), count: len(ids)})
		if c.done {
			break
		}
	}
	return recs, logged, nil
}

// messagePage is the result of im.dialog.messages.get.
type messagePage struct {
	Messages []json.RawMessage `json:"messages"`
	Files    []json.RawMessage `json:"files"`
}

// fileFields are the metadata of an attached file a message keeps. The URLs are left out: they
// carry per-request signatures, change from one read to the next, and the files themselves are
// not migrated (docs/bitrix-chats.md).
var fileFields = []string{"id", "chatId", "date", "type", "name", "extension", "size", "image", "status", "authorId", "authorName"}

// decodePage turns a page of messages into records, ids ascending. A message's payload is the
// message as the portal sent it, plus "files": the metadata of the files its FILE_ID names.
func (w *walker) decodePage(chat int64, r *rest.Response) ([]incoming, []int64, error) {
	var page messagePage
	if err := r.Decode(&page); err != nil {
		return nil, nil, fmt.Errorf("messages of chat %d: %w", chat, err)
	}
	files := map[string]map[string]json.RawMessage{}
	for _, raw := range page.Files {
		f, err := fieldsOf(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("files of chat %d: %w", chat, err)
		}
		kept := map[string]json.RawMessage{}
		for _, k := range fileFields {
			if v, ok := f[k]; ok {
				kept[k] = v
			}
		}
		files[text(f, "id")] = kept
	}
	recs := make([]incoming, 0, len(page.Messages))
	ids := make([]int64, 0, len(page.Messages))
	parent := w.parentOf(chat)
	for _, raw := range page.Messages {
		fields, err := fieldsOf(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("message of chat %d: %w", chat, err)
		}
		id, err := strconv.ParseInt(text(fields, "id"), 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("message of chat %d without a numeric id: %.200s", chat, raw)
		}
		attached := []map[string]json.RawMessage{}
		for _, f := range fileIDs(fields["params"]) {
			if meta, ok := files[f]; ok {
				attached = append(attached, meta)
			}
		}
		fields["files"] = mustJSON(attached)
		payload := mustJSON(fields)
		in, err := newIncoming(w.ent, parent+":"+strconv.FormatInt(id, 10), parent, payload, fields, w.zone)
		if err != nil {
			return nil, nil, err
		}
		recs, ids = append(recs, in), append(ids, id)
	}
	slices.Sort(ids)
	return recs, ids, nil
}

// fileIDs returns the ids in a message's params.FILE_ID; params is {} or [] when empty.
func fileIDs(params json.RawMessage) []string {
	var p struct {
		FileID []rest.ID `json:"FILE_ID"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	out := make([]string, len(p.FileID))
	for i, id := range p.FileID {
		out[i] = id.String()
	}
	return out
}

// uniqueIncoming drops repeated records, keeping the last: an answer longer than LIMIT (the
// portal adds unread messages) can make chained pages overlap.
func uniqueIncoming(recs []incoming) []incoming {
	at := map[string]int{}
	out := recs[:0]
	for _, r := range recs {
		if i, ok := at[r.sourceID]; ok {
			out[i] = r
			continue
		}
		at[r.sourceID] = len(out)
		out = append(out, r)
	}
	return out
}

// markUnreachable records that a chat can no longer be read: its payload gets the refusal, so
// it changes (back to NEW), and it moves on to IMPORT_ERR with the reason.
func (e *Engine) markUnreachable(ctx context.Context, tx pgx.Tx, chat int64, u *Unreachable, zone *time.Location) error {
	id := strconv.FormatInt(chat, 10)
	rec, err := GetRecord(ctx, tx, Chats, id)
	if err != nil {
		return err
	}
	row, err := decodeChatRow(rec.Payload)
	if err != nil {
		return err
	}
	row.Unreachable = u
	payload := mustJSON(row)
	fields, err := fieldsOf(payload)
	if err != nil {
		return err
	}
	in, err := newIncoming(e.entity(Chats), id, "", payload, fields, zone)
	if err != nil {
		return err
	}
	e.Log.Warn("chat no longer readable", "entity", Chats, "source_id", id, "reason", u.Reason())
	if _, err := saveRecords(ctx, tx, Chats, []incoming{in}, status.Change{Reason: "no longer readable", Actor: e.Actor, RunID: e.RunID}); err != nil {
		return err
	}
	return e.refuse(ctx, tx, []string{id}, u.Reason())
}
