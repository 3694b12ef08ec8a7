package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
)

// Edge is one page of a list: {"data": [...], "paging": {"cursors": {"before", "after"},
// "next", "previous"}}. A last page may have no paging object at all.
type Edge struct {
	Data   []json.RawMessage `json:"data"`
	Paging *struct {
		Cursors struct {
			Before string `json:"before"`
			After  string `json:"after"`
		} `json:"cursors"`
		Next     string `json:"next"`
		Previous string `json:"previous"`
	} `json:"paging"`
}

// After is the page's after cursor ("" when absent).
func (e *Edge) After() string {
	if e.Paging == nil {
		return ""
	}
	return e.Paging.Cursors.After
}

// HasNext reports whether the page links a next one. Meta: "Do not depend on the number of
// results being fewer than the limit ... a page may be empty but contain a next link".
func (e *Edge) HasNext() bool { return e.Paging != nil && e.Paging.Next != "" }

// EndRule says how a list announces its last page.
type EndRule int

const (
	// EndWithoutNext: the last page has no paging.next (user media, comments, replies, stories).
	EndWithoutNext EndRule = iota
	// EndWithoutAfter: the list never links pages (business_discovery media, which must be
	// asked again with .after(cursor)); the last page has no after cursor.
	EndWithoutAfter
)

// Next reads how the list goes on after e under rule r: more says the platform announces
// another page (paging.next, or for business discovery an after cursor), and cursor is what
// the next request is asked with (the after of the next link, else cursors.after). Only the
// platform ends a list: an empty page, a short page or a page that hands back the cursor it
// was asked with is not an end (Meta: "a page may be empty but contain a next link"); a walk
// bounds how many such pages it follows in a row (see social's walk).
func (r EndRule) Next(e *Edge) (cursor string, more bool) {
	if r == EndWithoutAfter {
		return e.After(), e.After() != ""
	}
	if !e.HasNext() {
		return "", false
	}
	if u, err := url.Parse(e.Paging.Next); err == nil {
		if after := u.Query().Get("after"); after != "" {
			return after, true
		}
	}
	return e.After(), true
}

// EdgeAt decodes the edge found at path inside body (no path: the body is the edge). A missing
// object on the path is an empty edge; anything else malformed is an error.
func EdgeAt(body []byte, path ...string) (*Edge, error) {
	raw := json.RawMessage(body)
	for _, key := range path {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("read %v: %w", path, err)
		}
		next, ok := obj[key]
		if !ok || bytes.Equal(bytes.TrimSpace(next), []byte("null")) {
			return &Edge{}, nil
		}
		raw = next
	}
	var e Edge
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("read list %v: %w", path, err)
	}
	return &e, nil
}
