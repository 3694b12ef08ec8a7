package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// Walking one ID chain waits for each batch's last ID before it can send the next batch, so on a
// portal that takes about a second to answer a full batch, one chain reads 2,500 rows a second
// however high the rate limit. Several ID ranges walked at once (each a chain of its own, many
// chains sharing a batch) keep the rate limit, not the answer time, the bound. ScanBounds
// learns how large the listing is and where it ends, ScanSegments reads the ranges' next pages.

// Bounds is what one request learns about an ID-keyed listing before it is split into ranges.
type Bounds struct {
	// First is the first page after the cursor, as ListByID's first page.
	First Page
	// Total is the number of rows after the cursor, -1 if the portal did not count them.
	Total int
	// Last is the highest ID after the cursor; "" when there is none.
	Last string
	// Time is the answer's time block: its date_start shows the portal's clock with the portal's
	// offset, so a new pass needs no request of its own to learn the portal's time zone.
	Time Time
}

// ScanBounds reads, in one batch request, the first page after the cursor with the count of the
// rows that follow it, and the highest ID (the first page of the same listing sorted the other
// way, start=-1 so it costs no count).
func (c *Client) ScanBounds(ctx context.Context, s Scan, after string) (Bounds, error) {
	return ScanBoundsWith(ctx, c.Batch, s, after)
}

// BoundsCommands returns the two commands ScanBounds sends ("first" and "last"), for a caller
// that asks them ahead of the scan (an answer kept for the scan's own call to take).
func (s Scan) BoundsCommands(after string) ([]Command, error) {
	if after == "" {
		after = "0"
	}
	first, err := s.params(after, "", 0)
	if err != nil {
		return nil, err
	}
	last, err := s.params(after, "", -1)
	if err != nil {
		return nil, err
	}
	maps.Copy(last, descending(s.order()))
	return []Command{{Key: "first", Method: s.Method, Params: first}, {Key: "last", Method: s.Method, Params: last}}, nil
}

// ScanBoundsWith is ScanBounds over batch, which sends the batch: a Source that answers some
// commands itself (from answers asked ahead) reads the bounds through its own Batch.
func ScanBoundsWith(ctx context.Context, batch BatchFunc, s Scan, after string) (Bounds, error) {
	if after == "" {
		after = "0"
	}
	cmds, err := s.BoundsCommands(after)
	if err != nil {
		return Bounds{}, err
	}
	br, err := Settle(ctx, batch, cmds)
	if err != nil {
		return Bounds{}, fmt.Errorf("list %s after %s: %w", s.Method, after, err)
	}
	b := Bounds{Total: -1, Time: br.Time}
	resp, err := br.Response("first")
	if err != nil {
		return Bounds{}, fmt.Errorf("list %s after %s: %w", s.Method, after, err)
	}
	if resp.Total != nil {
		b.Total = *resp.Total
	}
	rows, err := resp.Rows(s.RowsPath...)
	if err != nil {
		return Bounds{}, fmt.Errorf("list %s after %s: %w", s.Method, after, err)
	}
	if b.First, err = pageAfter(s, after, "", rows); err != nil {
		return Bounds{}, err
	}
	b.First.Total = b.Total
	if resp, err = br.Response("last"); err != nil {
		return Bounds{}, fmt.Errorf("list %s from the end: %w", s.Method, err)
	}
	if rows, err = resp.Rows(s.RowsPath...); err != nil {
		return Bounds{}, fmt.Errorf("list %s from the end: %w", s.Method, err)
	}
	if len(rows) > 0 {
		if b.Last, err = rowID(rows[0], s.idField()); err != nil {
			return Bounds{}, fmt.Errorf("list %s from the end: %w", s.Method, err)
		}
	}
	return b, nil
}

// Segment is one ID range's share of a batch: a chain of Pages pages after the ID After, up to
// and including the ID UpTo ("" for no upper bound).
type Segment struct {
	After, UpTo string
	Pages       int
}

// ScanSegments reads the segments' pages in one batch request, each segment a chain of its own
// (command i filters on the last ID of command i-1), and returns each segment's pages in order.
// A segment's pages end at its first page with fewer than 50 rows or ending at UpTo, which is
// marked Last (the range is read), or early, not Last, when one of its commands was refused for
// the method's operating-time limit (the client has paused the method; go on from the last
// page's Next). Answers after a short page are discarded: a reference into a short page
// resolves to garbage, not to an error. Any other command failure fails the call.
func (c *Client) ScanSegments(ctx context.Context, s Scan, segs []Segment) ([][]Page, error) {
	return ScanSegmentsWith(ctx, c.Batch, s, segs)
}

// SegmentCommands returns the commands ScanSegments sends for segs, in one batch: each segment a
// chain whose commands refer to the one before by its key. A caller that asks them ahead of the
// scan sends them as they are, keys included, in one batch.
func (s Scan) SegmentCommands(segs []Segment) ([]Command, error) {
	var cmds []Command
	for i, seg := range segs {
		if seg.Pages < 1 {
			return nil, fmt.Errorf("list %s: segment after %s has %d pages", s.Method, seg.After, seg.Pages)
		}
		chain, err := s.chain("s"+strconv.Itoa(i)+"p", seg.After, seg.UpTo, seg.Pages)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, chain...)
	}
	if len(cmds) > MaxBatch {
		return nil, fmt.Errorf("list %s: %d pages in one batch, want at most %d", s.Method, len(cmds), MaxBatch)
	}
	return cmds, nil
}

// ScanSegmentsWith is ScanSegments over batch, which sends the batch: a Source that answers some
// commands itself (from answers asked ahead) reads the segments through its own Batch.
func ScanSegmentsWith(ctx context.Context, batch BatchFunc, s Scan, segs []Segment) ([][]Page, error) {
	cmds, err := s.SegmentCommands(segs)
	if err != nil {
		return nil, err
	}
	br, err := batch(ctx, cmds, false)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.Method, err)
	}
	// A segment's first command refers to no other: one the answer left without a result (an
	// error it did not tie to a command, or none) is sent again on its own. The chain after it
	// referred to an answer that was not there, so it is read in a later request.
	var firsts []Command
	for i := range segs {
		if cmd := cmds[segStart(segs, i)]; len(br.silent([]Command{cmd})) > 0 {
			firsts = append(firsts, cmd)
		}
	}
	resent := map[string]bool{}
	if len(firsts) > 0 {
		again, err := Settle(ctx, batch, firsts)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s.Method, err)
		}
		br.Adopt(again, firsts)
		for _, cmd := range firsts {
			resent[cmd.Key] = true
		}
	}
	out := make([][]Page, len(segs))
	for i, seg := range segs {
		after := seg.After
		for p := range seg.Pages {
			key := "s" + strconv.Itoa(i) + "p" + strconv.Itoa(p)
			resp, err := br.Response(key)
			if HasCode(err, CodeOperationTimeLimit) || (p > 0 && Passing(err)) {
				break // the range goes on from its last page in a later request
			}
			if err != nil {
				return nil, fmt.Errorf("list %s after %s: %w", s.Method, after, err)
			}
			rows, err := resp.Rows(s.RowsPath...)
			if err != nil {
				return nil, fmt.Errorf("list %s after %s: %w", s.Method, after, err)
			}
			page, err := pageAfter(s, after, seg.UpTo, rows)
			if err != nil {
				return nil, err
			}
			out[i] = append(out[i], page)
			if page.Last || resent[key] {
				break
			}
			after = page.Next
		}
	}
	return out, nil
}

// segStart is the index in the batch of segment i's first command.
func segStart(segs []Segment, i int) int {
	n := 0
	for _, seg := range segs[:i] {
		n += seg.Pages
	}
	return n
}

// pageAfter makes the rows read after the ID after into a Page: Next is its last ID, and it is
// Last when it is short or reaches upTo.
func pageAfter(s Scan, after, upTo string, rows []json.RawMessage) (Page, error) {
	page := Page{Rows: rows, Cursor: after, Next: after, Total: -1, Last: len(rows) < PageSize}
	if len(rows) == 0 {
		return page, nil
	}
	last, err := rowID(rows[len(rows)-1], s.idField())
	if err != nil {
		return Page{}, fmt.Errorf("list %s after %s: %w", s.Method, after, err)
	}
	if !idAfter(last, after) {
		return Page{}, fmt.Errorf("list %s: page after %s ends at %s: %w", s.Method, after, last, ErrCursorStalled)
	}
	page.Next = last
	if upTo != "" && !idAfter(upTo, last) {
		page.Last = true
	}
	return page, nil
}

// descending turns sort parameters around: every "ASC" value becomes "DESC".
func descending(order map[string]any) map[string]any {
	out := make(map[string]any, len(order))
	for k, v := range order {
		switch v := v.(type) {
		case string:
			if strings.EqualFold(v, "ASC") {
				// In the case the method documents: tasks.task.list lists asc/desc, the CRM ASC/DESC.
				out[k] = "DESC"
				if v == strings.ToLower(v) {
					out[k] = "desc"
				}
				continue
			}
			out[k] = v
		case map[string]any:
			out[k] = descending(v)
		case map[string]string:
			m := make(map[string]any, len(v))
			for kk, vv := range v {
				m[kk] = vv
			}
			out[k] = descending(m)
		default:
			out[k] = v
		}
	}
	return out
}
