package rest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// PageSize is the fixed number of rows per page of Bitrix list methods.
const PageSize = 50

// Page is one page of a listing. Pages are handed to the callback in order,
// each before the next request is made, so the callback can store the rows
// together with Next and a later run can resume from there.
type Page struct {
	Rows []json.RawMessage
	// Cursor is where the page starts: for ListByID the ID its rows come
	// after ("0" at the beginning), for ListByStart the offset of its
	// first row.
	Cursor string
	// Next is the cursor to resume from once this page is stored.
	Next string
	// Total is the row count the portal reported, or -1 if it reported
	// none. For ListByID it is the count of rows after the listing's
	// starting cursor, taken once when the listing began; for ListByStart
	// each page's own count.
	Total int
	// Last is set on the final page.
	Last bool
}

// Scan describes how to walk a list method by ID: sorted by ID ascending,
// filtered to IDs above the last one seen, with start=-1 so the portal
// skips counting. Each page costs the same however deep into the table it
// is, which plain offsets do not.
type Scan struct {
	Method string
	// Params are the method's other parameters (select, filter...). They
	// must not set start; a filter given under FilterParam is kept and the
	// ID condition added to it.
	Params map[string]any
	// FilterParam is the name of the filter parameter; "" means "filter".
	FilterParam string
	// IDField is the key of the ID in each row; "" means "ID".
	IDField string
	// FilterField is the ID's name in filters and sorts when it differs
	// from IDField (tasks.task.list returns "id" but filters by "ID");
	// "" means IDField.
	FilterField string
	// Order holds the parameters that sort by ID ascending; nil means
	// {"order": {FilterField: "ASC"}}.
	Order map[string]any
	// RowsPath leads from the result to the list of rows for methods that
	// nest it ({"tasks": [...]} is RowsPath ["tasks"]).
	RowsPath []string
	// SkipCount leaves out the count the listing starts with. On tables so
	// large that counting is itself slow (the docs measured 50 s on 2.4M
	// rows) that saves the first request; pages then report Total -1 and
	// every batch carries 50 commands, the last one partly wasted.
	SkipCount bool
	// IDListOp is the filter prefix the method documents for "ID in a list" ("@" for user.get
	// and crm.item.list); "" when its documentation lists none (tasks.task.list and
	// sonet_group.get document ! < <= > >= and the like): records are then asked for one id to
	// a command, by plain equality, which every list method takes.
	IDListOp string
}

// UsersScan walks user.get, which takes its sort as two top-level
// parameters and its filter as FILTER.
func UsersScan(params map[string]any) Scan {
	return Scan{
		Method:      "user.get",
		Params:      params,
		FilterParam: "FILTER",
		Order:       map[string]any{"sort": "ID", "order": "ASC"},
		IDListOp:    "@",
	}
}

// GroupsScan walks sonet_group.get, whose default order is ID descending.
// Put "IS_ADMIN": "Y" in params: without it the portal leaves out the
// groups the webhook's user cannot see.
func GroupsScan(params map[string]any) Scan {
	return Scan{
		Method:      "sonet_group.get",
		Params:      params,
		FilterParam: "FILTER",
		Order:       map[string]any{"ORDER": map[string]any{"ID": "ASC"}},
	}
}

func (s Scan) idField() string { return orDefault(s.IDField, "ID") }

func (s Scan) filterField() string { return orDefault(s.FilterField, s.idField()) }

// IDFilterField is the ID's name in the method's filters ("ID", or "id" for crm.item.list).
func (s Scan) IDFilterField() string { return s.filterField() }

func orDefault(v, fallback string) string {
	if v == "" {
		return fallback
	}
	return v
}

// order returns the parameters that sort by ID ascending.
func (s Scan) order() map[string]any {
	if s.Order == nil {
		return map[string]any{"order": map[string]any{s.filterField(): "ASC"}}
	}
	return s.Order
}

// params returns the request parameters for the page after the ID after,
// up to and including the ID upTo unless it is "". after and upTo are
// string IDs or $result references.
func (s Scan) params(after, upTo string, start int) (map[string]any, error) {
	cond := map[string]any{">" + s.filterField(): after}
	if upTo != "" {
		cond["<="+s.filterField()] = upTo
	}
	p, err := s.withFilter(s.order(), cond)
	if err != nil {
		return nil, err
	}
	p["start"] = start
	return p, nil
}

// withFilter returns the scan's parameters with over's keys replacing theirs and cond's
// conditions added to the scan's own filter.
func (s Scan) withFilter(over, cond map[string]any) (map[string]any, error) {
	p := make(map[string]any, len(s.Params)+len(over)+2)
	maps.Copy(p, s.Params)
	maps.Copy(p, over)
	filterParam := orDefault(s.FilterParam, "filter")
	filter := map[string]any{}
	if f, ok := p[filterParam]; ok {
		fm, ok := f.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("list %s: %s must be a map[string]any, not %T", s.Method, filterParam, f)
		}
		maps.Copy(filter, fm)
	}
	maps.Copy(filter, cond)
	p[filterParam] = filter
	return p, nil
}

// IDQuery is one command's share of a listing by ids: the ids it asks for and its parameters.
type IDQuery struct {
	IDs    []string
	Params map[string]any
}

// ByIDs returns the commands that list the rows with the given ids with the scan's method, its
// parameters (over's keys replacing theirs) and its filter: the ID in a list, 50 ids a command,
// where the method documents a list operator (IDListOp), else the ID equal to one id a command.
// None counts (start -1): an answer is at most one page.
func (s Scan) ByIDs(ids []string, over map[string]any) ([]IDQuery, error) {
	perQuery := PageSize
	if s.IDListOp == "" {
		perQuery = 1
	}
	var out []IDQuery
	for chunk := range slices.Chunk(ids, perQuery) {
		cond := map[string]any{s.filterField(): chunk[0]}
		if s.IDListOp != "" {
			cond = map[string]any{s.IDListOp + s.filterField(): slices.Clone(chunk)}
		}
		p, err := s.withFilter(over, cond)
		if err != nil {
			return nil, err
		}
		p["start"] = -1
		out = append(out, IDQuery{IDs: slices.Clone(chunk), Params: p})
	}
	return out, nil
}

// ListByID walks a list method by ID from the cursor after ("" or "0" for
// the beginning) and calls fn with every page in order; an error from fn
// stops the listing and is returned.
//
// The first request is a single call that also counts the remaining rows
// (unless s.SkipCount). After that, pages are chained inside batches:
// command i filters on the last ID of command i-1 through a $result
// reference, so one HTTP request brings up to 50 pages (2,500 rows). A
// batch holds only as many commands as the count says are needed, and the
// listing ends at the first page with fewer than 50 rows; answers after a
// short page are discarded, because a reference into a short page does not
// fail, it resolves to garbage.
//
// To resume an interrupted listing, pass the Next of the last page stored.
func (c *Client) ListByID(ctx context.Context, s Scan, after string, fn func(Page) error) error {
	if after == "" {
		after = "0"
	}
	total, remaining := -1, -1
	if !s.SkipCount {
		params, err := s.params(after, "", 0)
		if err != nil {
			return err
		}
		resp, err := c.Call(ctx, s.Method, params)
		if err != nil {
			return fmt.Errorf("list %s after %s: %w", s.Method, after, err)
		}
		if resp.Total != nil {
			total = *resp.Total
		}
		rows, err := resp.Rows(s.RowsPath...)
		if err != nil {
			return fmt.Errorf("list %s after %s: %w", s.Method, after, err)
		}
		remaining = total - len(rows)
		next, done, err := deliverByID(s, after, rows, total, fn)
		if err != nil || done {
			return err
		}
		after = next
	}

	guess := 1 // pages to ask for once the count has proved short
	for operatingWaits, missing := 0, 0; ; {
		pages := MaxBatch
		if total >= 0 {
			pages, guess = batchPages(remaining, guess)
		}
		cmds, err := s.chain("p", after, "", pages)
		if err != nil {
			return err
		}
		br, err := c.Batch(ctx, cmds, true)
		if err != nil {
			return fmt.Errorf("list %s after %s: %w", s.Method, after, err)
		}
		for _, cmd := range cmds {
			resp, err := br.Response(cmd.Key)
			if HasCode(err, CodeOperationTimeLimit) && operatingWaits < maxOperatingWaits {
				operatingWaits++ // Batch paused the method; resume the chain from here
				break
			}
			if Passing(err) && missing < settleRounds {
				missing++ // no result and no error of its own: ask again from here
				break
			}
			if err != nil {
				return fmt.Errorf("list %s after %s: %w", s.Method, after, err)
			}
			operatingWaits, missing = 0, 0
			rows, err := resp.Rows(s.RowsPath...)
			if err != nil {
				return fmt.Errorf("list %s after %s: %w", s.Method, after, err)
			}
			next, done, err := deliverByID(s, after, rows, total, fn)
			if err != nil || done {
				return err
			}
			after = next
			remaining -= len(rows)
		}
	}
}

// chain builds the commands for the given number of pages after the ID
// after (up to upTo unless ""), keyed prefix0, prefix1..., each filtering
// on the last ID of the one before.
func (s Scan) chain(prefix, after, upTo string, pages int) ([]Command, error) {
	cmds := make([]Command, pages)
	cursor := after
	for i := range cmds {
		key := prefix + strconv.Itoa(i)
		params, err := s.params(cursor, upTo, -1)
		if err != nil {
			return nil, err
		}
		cmds[i] = Command{Key: key, Method: s.Method, Params: params}
		path := append(append([]string{}, s.RowsPath...), strconv.Itoa(PageSize-1), s.idField())
		cursor = Ref(key, path...)
	}
	return cmds, nil
}

// deliverByID hands one page to fn and returns the cursor after it and
// whether the listing is over.
func deliverByID(s Scan, after string, rows []json.RawMessage, total int, fn func(Page) error) (string, bool, error) {
	page := Page{Rows: rows, Cursor: after, Next: after, Total: total, Last: len(rows) < PageSize}
	if len(rows) > 0 {
		last, err := rowID(rows[len(rows)-1], s.idField())
		if err != nil {
			return "", false, fmt.Errorf("list %s after %s: %w", s.Method, after, err)
		}
		if !idAfter(last, after) {
			return "", false, fmt.Errorf("list %s: page after %s ends at %s: %w", s.Method, after, last, ErrCursorStalled)
		}
		page.Next = last
	}
	if err := fn(page); err != nil {
		return "", false, err
	}
	return page.Next, page.Last, nil
}

func rowID(row json.RawMessage, field string) (string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(row, &fields); err != nil {
		return "", fmt.Errorf("decode row: %w", err)
	}
	raw, ok := fields[field]
	if !ok {
		return "", fmt.Errorf("row has no %s field", field)
	}
	var id ID
	if err := json.Unmarshal(raw, &id); err != nil {
		return "", err
	}
	return string(id), nil
}

// CompareIDs orders two IDs as the portal sorts them: numerically when both are integers, by
// text otherwise. It returns -1, 0 or +1.
func CompareIDs(a, b string) int {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

func idAfter(a, b string) bool { return CompareIDs(a, b) > 0 }

// List describes a list method paged by offset (start=0, 50, 100...), for
// methods whose IDs cannot be filtered by range.
type List struct {
	Method string
	// Params are the method's other parameters; they must not set start.
	// Give a stable order, or pages shift under concurrent changes.
	Params map[string]any
	// RowsPath leads from the result to the list of rows, as in Scan.
	RowsPath []string
	// StartKey, when set, also sends the offset under that name, for methods whose pages
	// document it otherwise (bizproc.task.list's START).
	StartKey string
}

func (l List) params(start int) map[string]any { return l.PageParams(start) }

// PageParams returns the method's parameters for the page at offset start (also under StartKey,
// when set), for callers that send the page in a batch of their own.
func (l List) PageParams(start int) map[string]any {
	p := make(map[string]any, len(l.Params)+2)
	maps.Copy(p, l.Params)
	p["start"] = start
	if l.StartKey != "" {
		p[l.StartKey] = start
	}
	return p
}

// ListByStart pages through a list method by offset from start and calls
// fn with every page in order. The first call learns the total; the pages
// after it are requested up to 50 at a time in one batch. Each of those
// still costs the portal a count query, which is why ListByID is faster
// wherever it applies.
func (c *Client) ListByStart(ctx context.Context, l List, start int, fn func(Page) error) error {
	return ListByStartWith(ctx, c.Call, c.Batch, l, start, fn)
}

// CallFunc sends one call; Client.Call is one.
type CallFunc func(ctx context.Context, method string, params any) (*Response, error)

// ListByStartWith is ListByStart over call and batch, which send its requests: a Source that
// answers some commands itself (from answers asked ahead) pages through its own Call and Batch.
func ListByStartWith(ctx context.Context, call CallFunc, batch BatchFunc, l List, start int, fn func(Page) error) error {
	resp, err := call(ctx, l.Method, l.params(start))
	if err != nil {
		return fmt.Errorf("list %s from %d: %w", l.Method, start, err)
	}
	next, done, err := deliverByStart(l, start, resp, fn)
	if err != nil || done {
		return err
	}
	total := -1
	if resp.Total != nil {
		total = *resp.Total
	}

	guess := 1
	for operatingWaits := 0; ; {
		pages := MaxBatch
		if total >= 0 {
			pages, guess = batchPages(total-next, guess)
		}
		cmds := make([]Command, pages)
		for i := range cmds {
			cmds[i] = Command{Key: "p" + strconv.Itoa(i), Method: l.Method, Params: l.params(next + i*PageSize)}
		}
		br, err := Settle(ctx, batch, cmds)
		if err != nil {
			return fmt.Errorf("list %s from %d: %w", l.Method, next, err)
		}
		for _, cmd := range cmds {
			resp, err := br.Response(cmd.Key)
			if HasCode(err, CodeOperationTimeLimit) && operatingWaits < maxOperatingWaits {
				operatingWaits++
				break
			}
			if err != nil {
				return fmt.Errorf("list %s from %d: %w", l.Method, next, err)
			}
			operatingWaits = 0
			n, done, err := deliverByStart(l, next, resp, fn)
			if err != nil || done {
				return err
			}
			next = n
		}
	}
}

// batchPages is how many pages to ask for in one batch when the portal counted rows: those
// the count says remain, or, once pages went on past the count (a total that was the page's
// size, or a count that lags), a guess that doubles from one batch to the next. Only a page
// without next (or without rows) ends a listing; the count sizes batches, nothing more.
func batchPages(remaining, guess int) (pages, nextGuess int) {
	if remaining > 0 {
		return min((remaining+PageSize-1)/PageSize, MaxBatch), guess
	}
	return min(guess, MaxBatch), min(guess*2, MaxBatch)
}

func deliverByStart(l List, start int, resp *Response, fn func(Page) error) (int, bool, error) {
	rows, err := resp.Rows(l.RowsPath...)
	if err != nil {
		return 0, false, fmt.Errorf("list %s from %d: %w", l.Method, start, err)
	}
	next := start + len(rows)
	last := resp.Next == nil || len(rows) == 0
	if !last {
		next = *resp.Next
	}
	total := -1
	if resp.Total != nil {
		total = *resp.Total
	}
	page := Page{Rows: rows, Cursor: strconv.Itoa(start), Next: strconv.Itoa(next), Total: total, Last: last}
	if err := fn(page); err != nil {
		return 0, false, err
	}
	return next, last, nil
}
