package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/status"
)

// Walker reads a child entity once its parent's listing is complete (Entity.Walk). Get runs the
// walkers of an entity's children after its lister; each keeps its own pass in the child's
// inventory row and its place in the page log, so a get interrupted while walking lists the
// parent again and resumes the walk where it stopped.
type Walker interface {
	walk(ctx context.Context, e *Engine, child *Entity, st *GetStats) error
	// planCalls says how many calls the walk will send at least, for `ingest bitrix plan`;
	// records is -1 when the portal cannot say without the walk. planned holds the records the
	// plan found so far on the portal, by entity (the entities planned before this one).
	planCalls(ctx context.Context, e *Engine, child *Entity, planned map[string]int64) (records int64, calls int, how string, err error)
}

// KeyWalk is a Walker for listings that exist only per key and page behind a cursor: the feed
// comments of one author (log.blogcomment.user.get, USER_ID and FIRST_ID), the posts addressed
// to one audience (log.blogpost.get, LOG_RIGHTS and start). Every key is walked from its start
// to its first short page; a batch carries the next page of up to 50 keys, Concurrency batches
// in flight; each batch's records are stored with a page log row per key ("<key> <cursor>" to
// "<key> <next>" or "<key> done") in one transaction.
type KeyWalk struct {
	// Method is called once per page of a key.
	Method string
	// Keys lists the keys to walk, in order (every user read, for comments by author).
	Keys func(ctx context.Context, e *Engine) ([]string, error)
	// Params are the method's parameters for the page of key after cursor ("" for the first).
	Params func(key, cursor string) any
	// Page turns one answer into records and says where the key's walk goes on from, or that
	// it is done.
	Page func(p WalkPage) (rows []WalkRow, next string, done bool, err error)
	// How says, for `ingest bitrix plan`, what one key costs.
	How string
	// PlanKeys, when set, estimates for `ingest bitrix plan` how many keys the walk will have
	// from the records the plan found on the portal (planned, by entity), so that a plan made
	// before the entities the keys come from are read still counts them. The plan takes the
	// larger of it and the keys read so far.
	PlanKeys func(ctx context.Context, e *Engine, planned map[string]int64) (int64, error)
}

// WalkPage is one answer of a KeyWalk.
type WalkPage struct {
	Key, Cursor string
	Answer      *rest.Response
	// Me is the webhook's user (user.current): methods answer differently for its own records.
	Me string
}

// WalkRow is one record a walk read: its source id, its parent's source id and its payload.
type WalkRow struct {
	SourceID, Parent string
	Payload          json.RawMessage
}

// keyCursor is where one key's walk stands.
type keyCursor struct {
	key, at string
	done    bool
	tries   int // commands the portal refused for its operating-time limit
}

func (c *keyCursor) text() string {
	if c.done {
		return c.key + " done"
	}
	return c.key + " " + c.at
}

func parseKeyCursor(s string) keyCursor {
	key, at, _ := strings.Cut(s, " ")
	if at == "done" {
		return keyCursor{key: key, done: true}
	}
	return keyCursor{key: key, at: at}
}

func (w *KeyWalk) walk(ctx context.Context, e *Engine, child *Entity, st *GetStats) error {
	me, err := e.webhookUser(ctx)
	if err != nil {
		return fmt.Errorf("walk %s: %w", child.Name, err)
	}
	inv, err := loadInventory(ctx, e.Pool, child.Name)
	if err != nil {
		return err
	}
	resumed := inv.Pass > 0 && !inv.Complete
	if !resumed {
		if inv, err = startPass(ctx, e.Pool, child.Name, e.TestLimit); err != nil {
			return err
		}
	}
	keys, err := w.Keys(ctx, e)
	if err != nil {
		return fmt.Errorf("walk %s: list the keys: %w", child.Name, err)
	}
	queue, err := walkCursors(ctx, e.Pool, child.Name, inv.Pass, keys)
	if err != nil {
		return err
	}
	e.Log.Info("walking", "entity", child.Name, "method", w.Method, "pass", inv.Pass, "resumed", resumed,
		"keys", len(keys), "keys_left", len(queue))
	kw := &keyWalker{w: w, e: e, child: child, pass: inv.Pass, me: me, st: st, queue: queue, start: e.now()}
	if err := kw.run(ctx); err != nil {
		return fmt.Errorf("walk %s: %w", child.Name, err)
	}
	return finishWalk(ctx, e.Pool, child.Name)
}

// walkCursors returns where each key's walk starts in this pass: keys the pass finished are left
// out, keys it began go on from their last logged page, the others start at the beginning.
func walkCursors(ctx context.Context, db status.DB, entity string, pass int, keys []string) ([]*keyCursor, error) {
	rows, err := db.Query(ctx, `SELECT DISTINCT ON (split_part(cursor, ' ', 1)) next_cursor FROM bitrix_page_log
WHERE entity = $1 AND pass = $2 ORDER BY split_part(cursor, ' ', 1), id DESC`, entity, pass)
	if err != nil {
		return nil, fmt.Errorf("load %s cursors: %w", entity, err)
	}
	latest := map[string]keyCursor{}
	var next string
	_, err = pgx.ForEachRow(rows, []any{&next}, func() error {
		c := parseKeyCursor(next)
		latest[c.key] = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load %s cursors: %w", entity, err)
	}
	var out []*keyCursor
	for _, k := range keys {
		c, ok := latest[k]
		switch {
		case ok && c.done:
			continue
		case !ok:
			c = keyCursor{key: k}
		}
		out = append(out, &c)
	}
	return out, nil
}

// keyWalker works the queue of one KeyWalk with Concurrency workers: each job is the next page
// of up to a batch of keys; keys not done go back at the end of the queue.
type keyWalker struct {
	w     *KeyWalk
	e     *Engine
	child *Entity
	pass  int
	me    string
	start time.Time
	queue []*keyCursor // touched by the pool's next and ended only

	mu   sync.Mutex // guards st and read, written by the jobs
	st   *GetStats
	read int
}

func (k *keyWalker) run(ctx context.Context) error {
	take := func(context.Context) ([]*keyCursor, bool, error) {
		if len(k.queue) == 0 {
			return nil, false, nil
		}
		n := min(len(k.queue), rest.MaxBatch)
		job := slices.Clone(k.queue[:n])
		k.queue = k.queue[n:]
		return job, true, nil
	}
	return runPool(ctx, k.e.concurrency(), take, k.readJob, func(job []*keyCursor) {
		k.queue = requeue(k.queue, job, func(c *keyCursor) bool { return c.done })
	})
}

// readJob reads the next page of each key of a job in one batch and stores the records with a
// page log row per key in one transaction, so the cursors never run ahead of what is stored.
func (k *keyWalker) readJob(ctx context.Context, job []*keyCursor) error {
	cmds := make([]rest.Command, len(job))
	for i, c := range job {
		cmds[i] = rest.Command{Key: fmt.Sprintf("k%d", i), Method: k.w.Method, Params: k.w.Params(c.key, c.at)}
	}
	br, err := k.e.Source.Batch(ctx, cmds, false)
	if err != nil {
		return err
	}
	var rows []WalkRow
	var pages []pageRecord
	for i, c := range job {
		r, err := br.Response(cmds[i].Key)
		if err != nil {
			if rest.HasCode(err, rest.CodeOperationTimeLimit) && c.tries < maxCommandRetries {
				c.tries++ // the client pauses the method; the key is read again after the pause
				continue
			}
			return fmt.Errorf("%s of %s %s: %w", k.child.Name, k.w.Method, c.key, err)
		}
		got, next, done, err := k.w.Page(WalkPage{Key: c.key, Cursor: c.at, Answer: r, Me: k.me})
		if err != nil {
			return fmt.Errorf("%s %s after %q: %w", k.w.Method, c.key, c.at, err)
		}
		from := c.text()
		c.at, c.done = next, done
		rows = append(rows, got...)
		pages = append(pages, pageRecord{pass: k.pass, cursor: from, next: c.text(), count: len(got)})
	}
	zone, err := k.e.zoneOf(&rest.Response{Time: br.Time})
	if err != nil {
		return err
	}
	recs, err := k.incoming(ctx, rows, zone)
	if err != nil {
		return err
	}
	var got saved
	var refused int
	err = pgx.BeginFunc(ctx, k.e.Pool, func(tx pgx.Tx) error {
		var err error
		c := status.Change{Reason: "changed on the source", Actor: k.e.Actor, RunID: k.e.RunID}
		if got, err = saveRecords(ctx, tx, k.child.Name, recs, c); err != nil {
			return err
		}
		if refused, err = refuseUnreachable(ctx, tx, k.child.Name, recs, status.Change{Actor: k.e.Actor, RunID: k.e.RunID}); err != nil {
			return err
		}
		for _, p := range pages {
			if err := logPage(ctx, tx, k.child.Name, k.e.RunID, p); err != nil {
				return err
			}
		}
		if got.inserted+got.changed > 0 {
			return unverify(ctx, tx, verifiedAs(k.e.registry(), k.child))
		}
		return nil
	})
	if err != nil {
		return err
	}
	k.e.Metrics.RecordsExtracted.WithLabelValues(k.child.Name).Add(float64(len(recs)))
	k.mu.Lock()
	defer k.mu.Unlock()
	k.st.Pages += len(pages)
	k.st.Unreachable += refused
	k.st.add(k.child.Name, len(recs), got)
	k.read += len(recs)
	k.e.progress("get", k.child.Name, int64(k.read), nil, k.read, k.start)
	return nil
}

// incoming prepares the rows of a batch, the last of repeated ones kept. A row whose parent was
// not read (a comment on a post the webhook's user may not see) cannot be migrated: it is kept
// with that reason; under test_limit it is left out instead, since only the limited parents'
// children were asked for.
func (k *keyWalker) incoming(ctx context.Context, rows []WalkRow, zone *time.Location) ([]incoming, error) {
	parents := make([]string, len(rows))
	for i, r := range rows {
		parents[i] = r.Parent
	}
	slices.Sort(parents)
	gone, err := missing(ctx, k.e.Pool, k.child.Parent, slices.Compact(parents))
	if err != nil {
		return nil, err
	}
	noun := strings.TrimSuffix(k.child.Parent, "s")
	if p, ok := k.e.registry().Entity(k.child.Parent); ok && p.Noun != "" {
		noun = strings.TrimSuffix(p.Noun, "s")
	}
	var out []incoming
	for _, r := range rows {
		fields, err := fieldsOf(r.Payload)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", k.child.Name, r.SourceID, err)
		}
		payload := r.Payload
		if slices.Contains(gone, r.Parent) {
			if k.e.TestLimit > 0 {
				continue
			}
			payload = mustJSON(markUnreachable(fields, fmt.Sprintf("out of reach: its %s %s was not read from the portal "+
				"(not visible to the webhook's user, or deleted)", noun, r.Parent)))
		}
		in, err := newIncoming(k.child, r.SourceID, r.Parent, payload, fields, zone)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return uniqueIncoming(out), nil
}

// planCalls: at least one call per 50 keys (keys with more than a page cost more).
func (w *KeyWalk) planCalls(ctx context.Context, e *Engine, child *Entity, planned map[string]int64) (int64, int, string, error) {
	keys, err := w.Keys(ctx, e)
	if err != nil {
		return 0, 0, "", err
	}
	n := int64(len(keys))
	how := fmt.Sprintf("%s: %d keys from the records read so far, 50 to a call; more for keys past one page", w.How, n)
	if w.PlanKeys != nil {
		estimate, err := w.PlanKeys(ctx, e, planned)
		if err != nil {
			return 0, 0, "", err
		}
		if estimate > n {
			n = estimate
			how = fmt.Sprintf("%s: %d keys by the portal's counts of what they come from (not read yet), 50 to a call; "+
				"more for keys past one page", w.How, n)
		}
	}
	return -1, ceilDiv(n, rest.MaxBatch), how, nil
}

// walkChildren runs the walkers of ent's children, once its listing is complete.
func (e *Engine) walkChildren(ctx context.Context, ent *Entity, st *GetStats) error {
	for _, child := range e.registry().Children(ent) {
		if child.Walk == nil {
			continue
		}
		if err := child.Walk.walk(ctx, e, child, st); err != nil {
			return err
		}
	}
	return nil
}

// webhookUser returns the id of the webhook's user (user.current), asked once per engine.
func (e *Engine) webhookUser(ctx context.Context) (string, error) {
	e.meOnce.Lock()
	defer e.meOnce.Unlock()
	if e.me != "" {
		return e.me, nil
	}
	resp, err := e.Source.Call(ctx, "user.current", nil)
	if err != nil {
		return "", fmt.Errorf("learn the webhook's user: %w", err)
	}
	var u struct {
		ID rest.ID `json:"ID"`
	}
	if err := resp.Decode(&u); err != nil || u.ID == "" {
		return "", fmt.Errorf("learn the webhook's user: user.current answered %.100s", resp.Result)
	}
	e.me = u.ID.String()
	return e.me, nil
}

// storedIDs returns the source ids of an entity's records, in record order.
func storedIDs(ctx context.Context, db status.DB, entity string) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT source_id FROM bitrix_records WHERE entity = $1 ORDER BY id`, entity)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", entity, err)
	}
	return out, nil
}
