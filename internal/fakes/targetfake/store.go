package targetfake

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Record is a stored record.
type Record struct {
	Entity    string
	Key       string
	TargetID  string
	Checksum  string
	Payload   json.RawMessage
	UpdatedAt time.Time
}

// Field is a custom field of an entity.
type Field struct {
	Name     string          `json:"name"`
	Type     string          `json:"type"`
	Multiple bool            `json:"multiple"`
	Label    string          `json:"label,omitempty"`
	Settings json.RawMessage `json:"settings,omitempty"`
	Options  []Option        `json:"options,omitempty"`
}

// Option is one value of an enumeration field; the target assigns its ID.
type Option struct {
	ID      string `json:"id"`
	Value   string `json:"value"`
	Sort    int    `json:"sort"`
	Default bool   `json:"default"`
	XMLID   string `json:"xml_id,omitempty"`
}

// Stats counts what the target saw.
type Stats struct {
	// Requests is the number of HTTP requests.
	Requests int
	// Items is the number of items received by batch calls.
	Items int
	// Created, Updated and Unchanged count items by outcome; Unchanged
	// are resends of what was already there.
	Created, Updated, Unchanged int
	// Deleted counts records removed by import.<entity>.delete under the
	// keys it named; Cascaded the records removed with them as their
	// children.
	Deleted, Cascaded int
	// Failed counts items and keys answered with an error.
	Failed int
	// RateLimited counts 429 answers (FaultRateLimited).
	RateLimited int
	// Duplicates counts records created under a key that names, once
	// normalised, a source record already stored under another key.
	Duplicates int
}

type entity struct {
	name      string
	records   map[string]*Record
	byTarget  map[string]string // target ID -> key
	canonical map[string]string // normalised key -> key
	nextID    int
	fields    []Field
}

func (s *Server) entity(name string) *entity {
	e := s.entities[name]
	if e == nil {
		e = &entity{
			name:      name,
			records:   map[string]*Record{},
			byTarget:  map[string]string{},
			canonical: map[string]string{},
			nextID:    100001, // far from source IDs, so a mix-up shows
		}
		s.entities[name] = e
	}
	return e
}

type item struct {
	Key      string          `json:"key"`
	Checksum string          `json:"checksum"`
	Payload  json.RawMessage `json:"payload"`
}

type itemError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

type itemResult struct {
	Key      string     `json:"key"`
	TargetID string     `json:"target_id,omitempty"`
	Status   string     `json:"status,omitempty"`
	Error    *itemError `json:"error,omitempty"`
}

func (s *Server) batch(entityName string, body []byte) (any, error) {
	var req struct {
		Items []item `json:"items"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("body: %v", err)
	}
	if req.Items == nil {
		return nil, badRequest("no items")
	}
	if len(req.Items) > s.opts.MaxItems {
		return nil, badRequest("%d items, at most %d", len(req.Items), s.opts.MaxItems)
	}
	e := s.entity(entityName)
	results := make([]itemResult, len(req.Items))
	for i, it := range req.Items {
		s.stats.Items++
		results[i] = s.importItem(e, it)
		if results[i].Error != nil {
			s.stats.Failed++
		}
	}
	return map[string]any{"results": results}, nil
}

func (s *Server) importItem(e *entity, it item) itemResult {
	res := itemResult{Key: it.Key}
	fail := func(code, message string, retryable bool) itemResult {
		res.Error = &itemError{code, message, retryable}
		return res
	}
	switch {
	case it.Key == "" || len(it.Key) > 200:
		return fail("validation_failed", "key must be 1 to 200 bytes", false)
	case it.Checksum == "" || len(it.Checksum) > 128:
		return fail("validation_failed", "checksum must be 1 to 128 bytes", false)
	case !isObject(it.Payload):
		return fail("validation_failed", "payload must be a JSON object", false)
	}
	if _, err := canonicalJSON(it.Payload); err != nil {
		return fail("validation_failed", err.Error(), false)
	}
	if msg := e.badOption(it.Payload); msg != "" {
		return fail("validation_failed", msg, false)
	}
	if msg := s.badReference(e.name, it.Payload); msg != "" {
		return fail("reference_not_found", msg, false)
	}
	if msg, ok := s.rejected[e.name][it.Key]; ok {
		return fail("rejected", msg, false)
	}
	if s.failing[e.name] > 0 {
		s.failing[e.name]--
		return fail("temporarily_unavailable", "storage busy, try again", true)
	}
	now := s.opts.Now()
	rec, exists := e.records[it.Key]
	switch {
	case !exists:
		canon := canonicalKey(it.Key)
		if other, ok := e.canonical[canon]; ok && other != it.Key {
			s.stats.Duplicates++
		} else {
			e.canonical[canon] = it.Key
		}
		rec = &Record{Entity: e.name, Key: it.Key, TargetID: strconv.Itoa(e.nextID),
			Checksum: it.Checksum, Payload: compact(it.Payload), UpdatedAt: now}
		e.nextID++
		e.records[it.Key] = rec
		e.byTarget[rec.TargetID] = it.Key
		s.stats.Created++
		res.Status = "created"
	case rec.Checksum == it.Checksum:
		s.stats.Unchanged++
		res.Status = "unchanged"
	default:
		rec.Checksum, rec.Payload, rec.UpdatedAt = it.Checksum, compact(it.Payload), now
		s.stats.Updated++
		res.Status = "updated"
	}
	res.TargetID = rec.TargetID
	return res
}

func isObject(raw json.RawMessage) bool {
	trimmed := bytes.TrimSpace(raw)
	return len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed)
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return slices.Clone(raw)
	}
	return b.Bytes()
}

// canonicalKey normalises a key so that two spellings of one source
// record compare equal: case, spaces, and leading zeros of numeric parts.
func canonicalKey(key string) string {
	parts := strings.Split(strings.ToLower(strings.ReplaceAll(key, " ", "")), ":")
	for i, p := range parts {
		if n, err := strconv.ParseUint(p, 10, 64); err == nil {
			parts[i] = strconv.FormatUint(n, 10)
		}
	}
	return strings.Join(parts, ":")
}

type storedItem struct {
	Key       string          `json:"key"`
	TargetID  string          `json:"target_id"`
	Checksum  string          `json:"checksum"`
	Payload   json.RawMessage `json:"payload"`
	UpdatedAt time.Time       `json:"updated_at"`
}

func (s *Server) get(entityName string, body []byte) (any, error) {
	var req struct {
		Keys      []string `json:"keys"`
		TargetIDs []string `json:"target_ids"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("body: %v", err)
	}
	if (len(req.Keys) == 0) == (len(req.TargetIDs) == 0) {
		return nil, badRequest("give either keys or target_ids")
	}
	if n := len(req.Keys) + len(req.TargetIDs); n > s.opts.MaxItems {
		return nil, badRequest("%d lookups, at most %d", n, s.opts.MaxItems)
	}
	e := s.entity(entityName)
	items, missing := []storedItem{}, []string{}
	lookup := func(key, asked string) {
		rec, ok := e.records[key]
		if !ok {
			missing = append(missing, asked)
			return
		}
		items = append(items, storedItem{rec.Key, rec.TargetID, rec.Checksum, rec.Payload, rec.UpdatedAt.UTC()})
	}
	for _, k := range req.Keys {
		lookup(k, k)
	}
	for _, id := range req.TargetIDs {
		lookup(e.byTarget[id], id)
	}
	return map[string]any{"items": items, "missing": missing}, nil
}

// badOption says which enumeration value of a payload is not one of its field's option ids, as a
// real target refuses a value it cannot store; "" when all are.
func (e *entity) badOption(payload json.RawMessage) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(payload, &fields) != nil {
		return ""
	}
	for _, f := range e.fields {
		raw, ok := fields[f.Name]
		if f.Type != "enumeration" || !ok {
			continue
		}
		var values []any
		if json.Unmarshal(raw, &values) != nil {
			var one any
			_ = json.Unmarshal(raw, &one)
			values = []any{one}
		}
		for _, v := range values {
			id := fmt.Sprint(v)
			if v == nil || v == false || id == "" {
				continue
			}
			if !slices.ContainsFunc(f.Options, func(o Option) bool { return o.ID == id }) {
				return fmt.Sprintf("%s: %q is not an option id of the field", f.Name, id)
			}
		}
	}
	return ""
}

// maxList is the most entries one list page carries.
const maxList = 1000

type listItem struct {
	Key         string `json:"key"`
	TargetID    string `json:"target_id"`
	ContentHash string `json:"content_hash"`
}

// list answers import.<entity>.list: the records in key (byte) order after the cursor, with the
// hash of the payload as stored, so a record changed on the target shows.
func (s *Server) list(entityName string, body []byte) (any, error) {
	var req struct {
		Cursor string `json:"cursor"`
		Limit  int    `json:"limit"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("body: %v", err)
	}
	if req.Limit <= 0 || req.Limit > maxList {
		req.Limit = maxList
	}
	e := s.entity(entityName)
	keys := slices.Sorted(maps.Keys(e.records))
	i, _ := slices.BinarySearch(keys, req.Cursor)
	if i < len(keys) && keys[i] == req.Cursor {
		i++
	}
	items := []listItem{}
	for ; i < len(keys) && len(items) < req.Limit; i++ {
		rec := e.records[keys[i]]
		hash, err := contentHash(rec.Payload)
		if err != nil {
			return nil, fmt.Errorf("hash %s: %w", rec.Key, err)
		}
		items = append(items, listItem{rec.Key, rec.TargetID, hash})
	}
	next := ""
	if i < len(keys) {
		next = items[len(items)-1].Key
	}
	return map[string]any{"items": items, "next_cursor": next}, nil
}

func (e *entity) fieldList() []Field {
	if e.fields == nil {
		return []Field{}
	}
	return e.fields
}

func (s *Server) addFields(entityName string, body []byte) (any, error) {
	var req struct {
		Fields []Field `json:"fields"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("body: %v", err)
	}
	e := s.entity(entityName)
	type fieldResult struct {
		Name   string     `json:"name"`
		Status string     `json:"status,omitempty"`
		Error  *itemError `json:"error,omitempty"`
	}
	results := make([]fieldResult, len(req.Fields))
	for i, f := range req.Fields {
		results[i].Name = f.Name
		switch {
		case f.Name == "" || f.Type == "":
			results[i].Error = &itemError{"validation_failed", "name and type are required", false}
		case slices.ContainsFunc(e.fields, func(g Field) bool { return strings.EqualFold(g.Name, f.Name) }):
			results[i].Status = "exists"
		default:
			for j := range f.Options {
				s.nextOption++
				f.Options[j].ID = strconv.Itoa(s.nextOption)
			}
			e.fields = append(e.fields, f)
			results[i].Status = "created"
		}
	}
	return map[string]any{"results": results}, nil
}

// Records returns the stored records of an entity, ordered by key.
func (s *Server) Records(entityName string) []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entity(entityName)
	out := make([]Record, 0, len(e.records))
	for _, k := range slices.Sorted(maps.Keys(e.records)) {
		out = append(out, *e.records[k])
	}
	return out
}

// Lookup returns the record stored under a key.
func (s *Server) Lookup(entityName, key string) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.entity(entityName).records[key]
	if !ok {
		return Record{}, false
	}
	return *rec, true
}

// Put stores a record under a key behind the importer's back, as a faulty target or another
// writer might (a new target id; an existing record is replaced), and returns its target id.
func (s *Server) Put(entityName, key string, payload json.RawMessage) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entity(entityName)
	e.nextID++
	id := strconv.Itoa(900000 + e.nextID)
	sum := sha256.Sum256(payload)
	e.records[key] = &Record{Entity: entityName, Key: key, TargetID: id, Checksum: "sha256:" + hex.EncodeToString(sum[:]),
		Payload: compact(payload), UpdatedAt: s.opts.Now()}
	e.byTarget[id] = key
	return id
}

// Count returns how many records of the entity are stored.
func (s *Server) Count(entityName string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entity(entityName).records)
}

// Fields returns the entity's custom fields.
func (s *Server) Fields(entityName string) []Field {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.entity(entityName).fields)
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Corrupt changes one field of a stored record's payload behind the
// importer's back, as a faulty target might; the checksum is left alone.
func (s *Server) Corrupt(entityName, key, field string, value any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.entity(entityName).records[key]
	if !ok {
		return fmt.Errorf("corrupt: no %s record %q", entityName, key)
	}
	var payload map[string]any
	if err := json.Unmarshal(rec.Payload, &payload); err != nil {
		return fmt.Errorf("corrupt %q: %w", key, err)
	}
	payload[field] = value
	raw, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("corrupt %q: %w", key, err)
	}
	rec.Payload = raw
	return nil
}

// Delete removes a stored record, as if it had been lost; it reports
// whether there was one.
func (s *Server) Delete(entityName, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entity(entityName)
	if _, ok := e.records[key]; !ok {
		return false
	}
	e.remove(key)
	return true
}
