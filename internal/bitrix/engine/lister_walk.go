package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Walker reads a child entity once its parent's listing is complete (Entity.Walk). Get runs the
// walkers of an entity's children after its lister; each keeps its own pass in the child's
// inventory row and its place in the page log, so a get interrupted while walking lists the
// parent again and resumes the walk where it stopped.
type Walker interface {
	Walk(ctx context.Context, env Env, child *Entity, st *GetStats) error
	// PlanCalls says how many calls the walk will send at least, for `ingest bitrix plan`;
	// records is -1 when the portal cannot say without the walk. planned holds the records the
	// plan found so far on the portal, by entity (the entities planned before this one).
	PlanCalls(ctx context.Context, env Env, child *Entity, planned map[string]int64) (records int64, calls int, how string, err error)
}

// KeyWalk is a Walker for listings that exist only per key and page behind a cursor: what one
// author wrote (by FIRST_ID), what was addressed to one audience (by start), the history of one
// conversation (by LAST_ID). Every key is walked from its start to its first short page;
// a batch carries the next page of up to 50 keys (or, with Chain, several pages of a key when
// few keys are left), Concurrency batches in flight; each batch's records are stored with a page
// log row per page ("<key> <cursor>" to "<key> <next>" or "<key> done") in one transaction.
type KeyWalk struct {
	// Method is called once per page of a key.
	Method string
	// Keys lists the keys to walk, in order (every record read of the entity keys come from).
	Keys func(ctx context.Context, env Env) ([]string, error)
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
	PlanKeys func(ctx context.Context, env Env, planned map[string]int64) (int64, error)

	// The options below serve walks that outlive a pass (histories): without them a key
	// starts every pass at "" and reads one page per batch.

	// From, when set, says where a key the pass has not logged yet starts: last is where its
	// walk stood at the end of the last pass that logged it ("done" when it reached its end
	// there, "" when no pass did).
	From func(key, last string) string
	// Settled, when set, leaves out of a pass a key the pass has not walked yet that needs no
	// walk: last is where its walk stood at the end of the last pass that logged it ("done" when
	// it reached its end there). A history whose newest entry is already stored, as its parent's
	// listing shows, has nothing to read.
	Settled func(key, last string) bool
	// Chain, when above 1 and ChainParams is set, lets a batch carry up to Chain pages of one
	// key when few keys are left (50 commands shared among them), so that a batch is still
	// full. ChainParams gives the parameters of the page
	// after the one the command named previous asks for (through a $result reference), or ok
	// false when the key's cursor cannot be chained. Page is then told the page was chained, and
	// returns ErrChainBroken when its answer does not follow the cursor (the reference did not
	// resolve as expected): the key reads on from its cursor in a later batch.
	Chain       int
	ChainParams func(key, cursor, previous string) (params any, ok bool)
	// Lost, when set, records in the batch's transaction a key whose first page the portal
	// refused (ACCESS_ERROR, see Unreachable): its walk ends there. It stores what it keeps with
	// Env.SavePage in tx, as a Page of Unread records. Without it such a refusal fails the walk.
	Lost func(ctx context.Context, tx Store, key string, u *Unreachable, zone *time.Location) error
	// Reason is the status history's reason for a record that changed ("changed on the source"
	// when empty).
	Reason string
	// NoMe skips asking for the webhook's user (WalkPage.Me stays empty): a walk that does not
	// need it sends one call less.
	NoMe bool
	// AsUser: the keys are portal user ids, and a key whose user has a webhook of its own
	// (Config.Delegates) is read through it, in batches of its own, WalkPage.Me being that user.
	AsUser bool
}

// ErrChainBroken is Page's answer to a chained page that does not follow the key's cursor.
var ErrChainBroken = errors.New("the chained page does not follow the cursor")

// WalkPage is one answer of a KeyWalk.
type WalkPage struct {
	Key, Cursor string
	Answer      *rest.Response
	// Chained is set for a page asked through a reference to the page before it (KeyWalk.Chain).
	Chained bool
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

// Walk makes KeyWalk a Walker: the walk with the run's test_limit, for a child that declares it
// as its Walk (a lister that needs the pass and whether it resumed calls Run instead).
func (w *KeyWalk) Walk(ctx context.Context, env Env, child *Entity, st *GetStats) error {
	e := env.e
	if _, _, err := w.Run(ctx, e.env(), child, st, e.testLimit); err != nil {
		return err
	}
	return nil
}

// Run walks every key for child in the current pass (a new one unless the last was cut short),
// its inventory row started with test_limit limit, and ends the pass. It returns the pass and
// whether it resumed one.
func (w *KeyWalk) Run(ctx context.Context, env Env, child *Entity, st *GetStats, limit int) (pass int, resumed bool, err error) {
	e := env.e
	var me string
	if !w.NoMe {
		if me, err = e.webhookUser(ctx); err != nil {
			return 0, false, fmt.Errorf("walk %s: %w", child.Name, err)
		}
	}
	inv, err := e.store().loadInventory(ctx, child.Name)
	if err != nil {
		return 0, false, err
	}
	resumed = inv.Pass > 0 && !inv.Complete
	if !resumed {
		if inv, err = e.store().startPass(ctx, child.Name, limit); err != nil {
			return 0, false, err
		}
	}
	keys, err := w.Keys(ctx, e.env())
	if err != nil {
		return 0, false, fmt.Errorf("walk %s: list the keys: %w", child.Name, err)
	}
	queue, err := w.cursors(ctx, e.store(), child.Name, inv.Pass, keys)
	if err != nil {
		return 0, false, err
	}
	e.log.Info("walking", "entity", child.Name, "method", w.Method, "pass", inv.Pass, "resumed", resumed,
		"keys", len(keys), "keys_left", len(queue))
	kw := &keyWalker{w: w, e: e, child: child, pass: inv.Pass, me: me, st: st, queue: queue, start: e.now()}
	if err := kw.run(ctx); err != nil {
		return 0, false, fmt.Errorf("walk %s: %w", child.Name, err)
	}
	return inv.Pass, resumed, e.store().finishWalk(ctx, child.Name)
}

// cursors returns where each key's walk starts in this pass: keys the pass finished are left
// out, keys it began go on from their last logged page, the others start where From says (at
// the beginning without it).
func (w *KeyWalk) cursors(ctx context.Context, st Store, entity string, pass int, keys []string) ([]*keyCursor, error) {
	type logged struct {
		pass int
		at   keyCursor
	}
	latest := map[string]logged{}
	err := st.lastPageOfEachKey(ctx, entity, func(pass int, next string) {
		c := parseKeyCursor(next)
		latest[c.key] = logged{pass, c}
	})
	if err != nil {
		return nil, err
	}
	var out []*keyCursor
	for _, k := range keys {
		l, ok := latest[k]
		c := keyCursor{key: k}
		switch {
		case ok && l.pass == pass && l.at.done:
			continue
		case ok && l.pass == pass:
			c = l.at
		case ok && w.Settled != nil && w.Settled(k, strings.TrimPrefix(l.at.text(), k+" ")):
			continue
		case w.From != nil && !ok:
			c.at = w.From(k, "")
		case w.From != nil:
			c.at = w.From(k, strings.TrimPrefix(l.at.text(), k+" "))
		}
		out = append(out, &c)
	}
	return out, nil
}

// keyWalker works the queue of one KeyWalk with Concurrency workers: each job is the next pages
// of up to a batch of keys; keys not done go back at the end of the queue.
type keyWalker struct {
	w     *KeyWalk
	e     *Engine
	child *Entity
	pass  int
	me    string
	start time.Time
	queue []*keyCursor // touched by the pool's take and ended only

	mu   sync.Mutex // guards st and read, written by the jobs
	st   *GetStats
	read int
}

// keyJob is one key's commands in a batch: its next page, and the pages chained after it.
type keyJob struct {
	c    *keyCursor
	cmds []rest.Command
}

func (k *keyWalker) run(ctx context.Context) error {
	return runPool(ctx, k.e.concurrency, k.take, k.readJob, func(job []keyJob) {
		cursors := make([]*keyCursor, len(job))
		for i, j := range job {
			cursors[i] = j.c
		}
		k.queue = requeue(k.queue, cursors, func(c *keyCursor) bool { return c.done })
	})
}

// take returns the next job: the next page of each of the next keys, or a chain of several
// pages of a key when few keys are left, up to a batch of commands.
func (k *keyWalker) take(context.Context) ([]keyJob, bool, error) {
	if len(k.queue) == 0 {
		return nil, false, nil
	}
	chain := 1
	if k.w.ChainParams != nil {
		chain = min(max(rest.MaxBatch/len(k.queue), 1), max(k.w.Chain, 1))
	}
	var job []keyJob
	for cmds := 0; len(k.queue) > 0 && cmds < rest.MaxBatch; {
		c := k.queue[0]
		if len(job) > 0 && (k.delegate(c.key) != nil || k.delegate(job[0].c.key) != nil) {
			break // a user's own webhook reads that user's key alone
		}
		k.queue = k.queue[1:]
		i := len(job)
		j := keyJob{c: c, cmds: []rest.Command{{Key: fmt.Sprintf("k%d", i), Method: k.w.Method, Params: k.w.Params(c.key, c.at)}}}
		for p := 1; p < min(chain, rest.MaxBatch-cmds); p++ {
			params, ok := k.w.ChainParams(c.key, c.at, j.cmds[p-1].Key)
			if !ok {
				break
			}
			j.cmds = append(j.cmds, rest.Command{Key: fmt.Sprintf("k%d_%d", i, p), Method: k.w.Method, Params: params})
		}
		job = append(job, j)
		cmds += len(j.cmds)
	}
	return job, true, nil
}

// lostKey is a key whose walk the portal refused.
type lostKey struct {
	key string
	u   *Unreachable
}

// readJob reads a job in one batch and stores the records with a page log row per page in one
// transaction, so the cursors never run ahead of what is stored.
func (k *keyWalker) readJob(ctx context.Context, job []keyJob) error {
	var cmds []rest.Command
	for _, j := range job {
		cmds = append(cmds, j.cmds...)
	}
	src, me := k.e.source, k.me
	if d := k.delegate(job[0].c.key); d != nil {
		src, me = d, job[0].c.key
	}
	br, err := src.Batch(ctx, cmds, false)
	if err != nil {
		return err
	}
	resent, err := settleFirsts(ctx, src, br, job)
	if err != nil {
		return err
	}
	var rows []WalkRow
	var pages []PageRecord
	var lost []lostKey
	for _, j := range job {
		got, logged, u, err := k.keyPages(br, j, me, resent[j.cmds[0].Key])
		if err != nil {
			return err
		}
		if u != nil {
			lost = append(lost, lostKey{j.c.key, u})
		}
		rows, pages = append(rows, got...), append(pages, logged...)
	}
	zone, err := k.e.zoneOf(&rest.Response{Time: br.Time})
	if err != nil {
		return err
	}
	recs, err := k.incoming(ctx, rows, zone)
	if err != nil {
		return err
	}
	page := Page{Records: []EntityRecords{{k.child, recs}}, Reason: k.w.Reason, Log: []PageLog{{k.child.Name, pages}},
		then: func(ctx context.Context, tx Store) error {
			for _, l := range lost {
				if err := k.w.Lost(ctx, tx, l.key, l.u, zone); err != nil {
					return err
				}
			}
			return nil
		}}
	saved, err := k.e.savePage(ctx, k.e.store(), page)
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.st.Pages += len(pages)
	k.st.Unreachable += saved.Refused + len(lost)
	saved.AddCounts(k.st)
	k.read += len(recs)
	k.e.progress("get", k.child.Name, int64(k.read), nil, k.read, k.start)
	return nil
}

// settleFirsts sends again, through rest.Settle, the first command of every key the answer
// left without a result of its own (an error it did not tie to a command, or none): a first
// command refers to no other, so it can go alone, where an error can only be its own. It
// reports which were sent again; their answers (results or errors) replace the first ones.
func settleFirsts(ctx context.Context, src Source, br *rest.BatchResult, job []keyJob) (map[string]bool, error) {
	var firsts []rest.Command
	for _, j := range job {
		if _, err := br.Response(j.cmds[0].Key); rest.Passing(err) {
			firsts = append(firsts, j.cmds[0])
		}
	}
	if len(firsts) == 0 {
		return nil, nil
	}
	again, err := rest.Settle(ctx, src.Batch, firsts)
	if err != nil {
		return nil, err
	}
	br.Adopt(again, firsts)
	resent := map[string]bool{}
	for _, cmd := range firsts {
		resent[cmd.Key] = true
	}
	return resent, nil
}

// keyPages takes one key's pages out of a batch's answer and moves its cursor past them. A chain
// stops at the key's end or at the first failed command or page that does not follow: the pages
// after it asked with a reference that did not resolve. A refusal of the key's first page ends
// its walk when the walk records lost keys (u).
func (k *keyWalker) keyPages(br *rest.BatchResult, j keyJob, me string, resent bool) (rows []WalkRow, pages []PageRecord, u *Unreachable, err error) {
	c := j.c
	for p, cmd := range j.cmds {
		r, err := br.Response(cmd.Key)
		if err != nil {
			if p > 0 {
				break
			}
			if lost, ok := UnreachableFrom(k.w.Method, err); ok && k.w.Lost != nil {
				c.done = true
				return nil, nil, lost, nil
			}
			if rest.HasCode(err, rest.CodeOperationTimeLimit) && c.tries < maxCommandRetries {
				c.tries++ // the client pauses the method; the key is read again after the pause
				break
			}
			return nil, nil, nil, fmt.Errorf("%s of %s %s: %w", k.child.Name, k.w.Method, c.key, err)
		}
		got, next, done, err := k.w.Page(WalkPage{Key: c.key, Cursor: c.at, Answer: r, Chained: p > 0, Me: me})
		if p > 0 && errors.Is(err, ErrChainBroken) {
			break
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s %s after %q: %w", k.w.Method, c.key, c.at, err)
		}
		from := c.text()
		c.at, c.done = next, done
		rows = append(rows, got...)
		pages = append(pages, PageRecord{Pass: k.pass, Cursor: from, Next: c.text(), Count: len(got)})
		if done || resent {
			break // a first page sent again alone: the chain after it referred to no answer
		}
	}
	return rows, pages, nil, nil
}

// incoming prepares the rows of a batch, the last of repeated ones kept. A row whose parent was
// not read (a child of a record the webhook's user may not see) cannot be migrated: it is kept
// with that reason; under test_limit it is left out instead, since only the limited parents'
// children were asked for.
func (k *keyWalker) incoming(ctx context.Context, rows []WalkRow, zone *time.Location) ([]Incoming, error) {
	parents := make([]string, len(rows))
	for i, r := range rows {
		parents[i] = r.Parent
	}
	slices.Sort(parents)
	gone, err := k.e.store().missing(ctx, k.child.Parent, slices.Compact(parents))
	if err != nil {
		return nil, err
	}
	noun := strings.TrimSuffix(k.child.Parent, "s")
	if p, ok := k.e.registry.Entity(k.child.Parent); ok && p.Noun != "" {
		noun = strings.TrimSuffix(p.Noun, "s")
	}
	var out []Incoming
	for _, r := range rows {
		fields, err := FieldsOf(r.Payload)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", k.child.Name, r.SourceID, err)
		}
		payload := r.Payload
		if slices.Contains(gone, r.Parent) {
			if k.e.testLimit > 0 {
				continue
			}
			payload = MustJSON(MarkUnreachable(fields, fmt.Sprintf("out of reach: its %s %s was not read from the portal "+
				"(not visible to the webhook's user, or deleted)", noun, r.Parent)))
		}
		in, err := NewIncoming(k.child, r.SourceID, r.Parent, payload, fields, zone)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return uniqueIncoming(out), nil
}

// PlanCalls is at least one call per 50 keys (keys with more than a page cost more): the plan
// cannot know a key's pages before it is read.
func (w *KeyWalk) PlanCalls(ctx context.Context, env Env, child *Entity, planned map[string]int64) (int64, int, string, error) {
	e := env.e
	keys, err := w.Keys(ctx, e.env())
	if err != nil {
		return 0, 0, "", err
	}
	n := int64(len(keys))
	how := fmt.Sprintf("%s: %d keys from the records read so far, 50 to a call; more for keys past one page", w.How, n)
	if w.PlanKeys != nil {
		estimate, err := w.PlanKeys(ctx, e.env(), planned)
		if err != nil {
			return 0, 0, "", err
		}
		if estimate > n {
			n = estimate
			how = fmt.Sprintf("%s: %d keys by the portal's counts of what they come from (not read yet), 50 to a call; "+
				"more for keys past one page", w.How, n)
		}
	}
	calls := CeilDiv(n, rest.MaxBatch)
	if w.From == nil && n == int64(len(keys)) && (!w.AsUser || len(e.delegates) == 0) {
		// Keys start over every pass: a rerun reads each as many pages as the last pass did.
		last, err := e.store().lastPassPages(ctx, child.Name)
		if err != nil {
			return 0, 0, "", err
		}
		if len(last) > 0 {
			pages := make([]int, len(keys))
			for i, k := range keys {
				pages[i] = max(last[k], 1)
			}
			chain := 1
			if w.ChainParams != nil {
				chain = w.Chain
			}
			calls = walkCalls(pages, chain)
			how = fmt.Sprintf("%s: %d keys from the records read so far, each as many pages as in the last pass, 50 pages to a call", w.How, n)
		}
	}
	if d := int64(len(e.delegates)); w.AsUser && d > 0 {
		// A user's own webhook reads that user's key alone: a call of its own each.
		calls = CeilDiv(max(n-d, 0), rest.MaxBatch) + int(d)
		how += fmt.Sprintf("; %d keys through their owners' own webhooks, one to a call", d)
	}
	return -1, calls, how, nil
}

// walkChildren runs the walkers of ent's children, once its listing is complete.
func (e *Engine) walkChildren(ctx context.Context, ent *Entity, st *GetStats) error {
	for _, child := range e.registry.Children(ent) {
		if child.Walk == nil {
			continue
		}
		if err := child.Walk.Walk(ctx, e.env(), child, st); err != nil {
			return err
		}
	}
	return nil
}

// uniqueIncoming drops repeated records, keeping the last: an answer longer than its limit (the
// portal adds unread rows to a page) can make chained pages overlap.
func uniqueIncoming(recs []Incoming) []Incoming {
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

// delegate is the webhook of the user a key names, for an AsUser walk; nil when the key is read
// through the run's own webhook.
func (k *keyWalker) delegate(key string) Source {
	if !k.w.AsUser {
		return nil
	}
	return k.e.delegates[key]
}
