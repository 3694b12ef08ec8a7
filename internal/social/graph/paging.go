package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// More reports whether another page follows e under rule r, given the cursor e was asked with:
// a list that hands back the cursor it was given makes no progress and is taken as ended, so
// a misbehaving list cannot loop forever.
func (r EndRule) More(e *Edge, askedWith string) bool {
	after := e.After()
	if after == "" || after == askedWith {
		return false
	}
	if r == EndWithoutNext {
		return e.HasNext()
	}
	return true
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
