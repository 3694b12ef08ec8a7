package targetfake

import (
	"bytes"
	"encoding/json"
	"strings"
)

// owner is one way a record belongs to another (docs/target-import-api.md, "import.<entity>.delete"):
// a record of child whose field names a parent's target id goes when that parent is deleted.
// when, if set, is a field and the value it must hold for the link to be ownership (a timeline
// comment belongs to a deal, a company or a contact by its ENTITY_TYPE).
type owner struct {
	child, field, parent string
	when                 [2]string
}

// owners are the ownership links of the contract. Every other reference (a subtask's parentId,
// a deal's companyId, a post's author) is not ownership: deleting what it names leaves the record
// that refers to it alone.
var owners = []owner{
	{child: "group_members", field: "GROUP_ID", parent: "groups"},
	{child: "chat_messages", field: "chat_id", parent: "chats"},
	{child: "feed_recipients", field: "post_id", parent: "feed"},
	{child: "feed_comments", field: "post_id", parent: "feed"},
	{child: "task_checklists", field: "task_id", parent: "tasks"},
	{child: "task_comments", field: "task_id", parent: "tasks"},
	{child: "deal_products", field: "ownerId", parent: "deals"},
	{child: "crm_comments", field: "ENTITY_ID", parent: "deals", when: [2]string{"ENTITY_TYPE", "deal"}},
	{child: "crm_comments", field: "ENTITY_ID", parent: "companies", when: [2]string{"ENTITY_TYPE", "company"}},
	{child: "crm_comments", field: "ENTITY_ID", parent: "contacts", when: [2]string{"ENTITY_TYPE", "contact"}},
}

type deleteResult struct {
	Key      string     `json:"key"`
	Status   string     `json:"status,omitempty"`
	Children *int       `json:"children,omitempty"`
	Error    *itemError `json:"error,omitempty"`
}

// deleteKeys answers import.<entity>.delete: each key in order, deleted with its children or
// not_found; a key given twice is not_found the second time.
func (s *Server) deleteKeys(entityName string, body []byte) (any, error) {
	var req struct {
		Keys []string `json:"keys"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("body: %v", err)
	}
	if len(req.Keys) == 0 {
		return nil, badRequest("no keys")
	}
	if len(req.Keys) > s.opts.MaxItems {
		return nil, badRequest("%d keys, at most %d", len(req.Keys), s.opts.MaxItems)
	}
	e := s.entity(entityName)
	idx := childIndex{}
	results := make([]deleteResult, len(req.Keys))
	for i, key := range req.Keys {
		results[i] = s.deleteOne(e, key, idx)
		if results[i].Error != nil {
			s.stats.Failed++
		}
	}
	return map[string]any{"results": results}, nil
}

func (s *Server) deleteOne(e *entity, key string, idx childIndex) deleteResult {
	res := deleteResult{Key: key}
	fail := func(code, message string, retryable bool) deleteResult {
		res.Error = &itemError{code, message, retryable}
		return res
	}
	if key == "" || len(key) > 200 {
		return fail("validation_failed", "key must be 1 to 200 bytes", false)
	}
	if msg, ok := s.rejected[e.name][key]; ok {
		return fail("rejected", msg, false)
	}
	if s.failing[e.name] > 0 {
		s.failing[e.name]--
		return fail("temporarily_unavailable", "storage busy, try again", true)
	}
	rec, ok := e.records[key]
	if !ok {
		res.Status = "not_found"
		return res
	}
	e.remove(key)
	s.stats.Deleted++
	n := s.removeChildren(e.name, rec.TargetID, idx)
	s.stats.Cascaded += n
	res.Status, res.Children = "deleted", &n
	return res
}

// removeChildren removes, recursively, the records a deleted record of parent (by its target id)
// owned, and returns how many.
func (s *Server) removeChildren(parent, targetID string, idx childIndex) int {
	n := 0
	for i, o := range owners {
		if o.parent != parent {
			continue
		}
		child := s.entity(o.child)
		for _, key := range idx.keys(i, child)[targetID] {
			rec, ok := child.records[key]
			if !ok {
				continue // another owner took it already
			}
			child.remove(key)
			n += 1 + s.removeChildren(o.child, rec.TargetID, idx)
		}
	}
	return n
}

// childIndex maps, per ownership link, a parent's target id to the keys of the records it owns.
// It is built once per request and only for the links a deletion reaches, so that deleting a
// hundred deals reads the product rows once, not a hundred times.
type childIndex map[int]map[string][]string

func (idx childIndex) keys(i int, child *entity) map[string][]string {
	if m, ok := idx[i]; ok {
		return m
	}
	o, m := owners[i], map[string][]string{}
	for key, rec := range child.records {
		doc := decodeObject(rec.Payload)
		if o.when[0] != "" && !strings.EqualFold(idString(doc[o.when[0]]), o.when[1]) {
			continue
		}
		if id := idString(doc[o.field]); id != "" {
			m[id] = append(m[id], key)
		}
	}
	idx[i] = m
	return m
}

func decodeObject(raw json.RawMessage) map[string]any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var doc map[string]any
	_ = d.Decode(&doc)
	return doc
}

// idString reads a reference written as a string or a number; "" for anything else.
func idString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

// remove drops a record from the entity's maps.
func (e *entity) remove(key string) {
	rec, ok := e.records[key]
	if !ok {
		return
	}
	delete(e.records, key)
	delete(e.byTarget, rec.TargetID)
	if e.canonical[canonicalKey(key)] == key {
		delete(e.canonical, canonicalKey(key))
	}
}
