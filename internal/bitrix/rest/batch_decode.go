package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/ingest-dev/ingest/internal/rawjson"
)

// Real portals answer a batch in more shapes than the documentation shows (research/bitrix.md
// §3, and answers recorded from portals): PHP serialises an empty part as [] and a part whose
// keys run 0, 1, 2... as a JSON list, so commands keyed 0.. (or answers re-keyed by position on
// the way) turn result, result_time, result_total and result_next into lists; result_next
// leaves out the commands without a next page; a failed command is simply absent from result;
// and result_error comes as [], as an object keyed by command, or as an unkeyed list of errors
// that cannot be tied to commands. decodeBatch reads them all into one BatchResult keyed by the
// commands as sent.

// section is one part of a batch answer keyed by command; list tells it came as a JSON list
// (PHP's array with keys 0, 1, 2...).
type section struct {
	members map[string]json.RawMessage
	order   []string // the keys in document order
	list    bool
}

// split reads a section from bytes already validated (they are part of a decoded answer).
func (s *section) split(b []byte) error {
	s.members = map[string]json.RawMessage{}
	if list, err := rawjson.Elements(b); err == nil {
		s.list = true
		for i, v := range list {
			s.members[strconv.Itoa(i)] = v
			s.order = append(s.order, strconv.Itoa(i))
		}
		return nil
	}
	err := rawjson.Members(b, func(k string, v json.RawMessage) {
		if _, dup := s.members[k]; !dup {
			s.order = append(s.order, k)
		}
		s.members[k] = v
	})
	if err != nil {
		return fmt.Errorf("want an object or a list, got %.40s", b)
	}
	return nil
}

// keys ties the keys of an answer to the commands sent: a key is a command's own, or, when no
// command was keyed like an index, a position in the batch (an answer keyed 0, 1, 2... by
// whatever re-keyed the commands on the way).
type keys struct {
	order   []string
	sent    map[string]bool
	indexed bool // some command's own key looks like an index: positions are not used
}

func newKeys(cmds []Command) keys {
	k := keys{sent: make(map[string]bool, len(cmds))}
	for _, c := range cmds {
		k.order = append(k.order, c.Key)
		k.sent[c.Key] = true
		if isIndex(c.Key) {
			k.indexed = true
		}
	}
	return k
}

func isIndex(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && strconv.Itoa(n) == s
}

// resolve returns the command an answer's key stands for, and whether the key was the
// command's own (not a position).
func (k keys) resolve(key string) (cmd string, own, ok bool) {
	if k.sent[key] {
		return key, true, true
	}
	if k.indexed || !isIndex(key) {
		return "", false, false
	}
	i, _ := strconv.Atoi(key)
	if i >= len(k.order) {
		return "", false, false
	}
	return k.order[i], false, true
}

type batchParts struct {
	result, errors, total, next, time section
}

func decodeBatch(env *envelope, cmds []Command, methods map[string]string) (*BatchResult, error) {
	// env.Result was validated with the whole answer: split it instead of decoding it again.
	var p batchParts
	parts := map[string]*section{"result": &p.result, "result_error": &p.errors, "result_total": &p.total,
		"result_next": &p.next, "result_time": &p.time}
	var splitErr error
	err := rawjson.Members(env.Result, func(k string, v json.RawMessage) {
		if sec, ok := parts[k]; ok && !isEmptyJSON(v) && splitErr == nil {
			splitErr = sec.split(v)
		}
	})
	if isEmptyJSON(env.Result) {
		err = nil // every part empty: PHP's [] for the whole result
	}
	if err = errors.Join(err, splitErr); err != nil {
		return nil, fmt.Errorf("bitrix batch: decode answer: %w", err)
	}
	k := newKeys(cmds)
	res := &BatchResult{
		Results: make(map[string]json.RawMessage, len(p.result.members)),
		Errors:  map[string]*APIError{},
		Totals:  make(map[string]int, len(p.total.members)),
		Nexts:   make(map[string]int, len(p.next.members)),
		Times:   make(map[string]Time, len(p.time.members)),
		Time:    env.Time,
		methods: methods,
	}
	// byPosition: the answer keyed some command by its position, not its own key (or the
	// commands' own keys are positions): only then can a list of errors be PHP's keying by
	// position rather than an unkeyed list.
	byPosition := k.indexed
	each := func(sec section, what string, fn func(cmd string, raw json.RawMessage) error) error {
		for key, raw := range sec.members {
			cmd, own, ok := k.resolve(key)
			if !ok {
				continue // a command the batch did not send; nothing to tie it to
			}
			byPosition = byPosition || !own
			if err := fn(cmd, raw); err != nil {
				return fmt.Errorf("bitrix batch: %s of command %s: %w", what, cmd, err)
			}
		}
		return nil
	}
	err = errors.Join(
		each(p.result, "result", func(cmd string, raw json.RawMessage) error { res.Results[cmd] = raw; return nil }),
		each(p.total, "total", func(cmd string, raw json.RawMessage) error {
			n, err := decodeInt(raw)
			res.Totals[cmd] = n
			return err
		}),
		each(p.next, "next", func(cmd string, raw json.RawMessage) error {
			n, err := decodeInt(raw)
			res.Nexts[cmd] = n
			return err
		}),
		each(p.time, "time", func(cmd string, raw json.RawMessage) error {
			var t Time
			err := json.Unmarshal(raw, &t)
			res.Times[cmd] = t
			return err
		}))
	if err != nil {
		return nil, err
	}
	if err := res.tieErrors(p.errors, k, byPosition); err != nil {
		return nil, err
	}
	return res, nil
}

// tieErrors sorts result_error into the commands' errors and the unmatched ones. An object is
// keyed by command (or by position). A list is PHP's keying by position only when the rest of
// the answer is keyed by position too and every entry falls on a command without a result;
// otherwise it is an unkeyed list. Last, errors no command claims while exactly one command has neither a
// result nor an error are that command's: every error of a batch belongs to a command that did
// not answer.
func (res *BatchResult) tieErrors(sec section, k keys, byPosition bool) error {
	type entry struct {
		key string
		err *APIError
	}
	var entries []entry
	for _, key := range sec.order {
		e, err := decodeCommandError(sec.members[key])
		if err != nil {
			return fmt.Errorf("bitrix batch: decode error %s: %w", key, err)
		}
		entries = append(entries, entry{key, e})
	}
	positional := !sec.list || byPosition
	if sec.list && positional {
		for _, en := range entries {
			cmd, _, ok := k.resolve(en.key)
			if _, answered := res.Results[cmd]; !ok || answered {
				positional = false
				break
			}
		}
	}
	for _, en := range entries {
		if cmd, _, ok := k.resolve(en.key); ok && positional {
			en.err.Method = methodOf(res.methods, cmd)
			res.Errors[cmd] = en.err
			continue
		}
		en.err.Method = "batch"
		res.Unmatched = append(res.Unmatched, en.err)
	}
	if len(res.Unmatched) == 0 {
		return nil
	}
	var silent []string
	for _, cmd := range k.order {
		_, answered := res.Results[cmd]
		_, failed := res.Errors[cmd]
		if !answered && !failed {
			silent = append(silent, cmd)
		}
	}
	if len(silent) == 1 {
		e := res.Unmatched[0]
		e.Method = methodOf(res.methods, silent[0])
		res.Errors[silent[0]] = e
		res.Unmatched = nil
	}
	return nil
}

// decodeCommandError reads one entry of result_error: {"error": code, "error_description":
// text}, the code a string, a number or absent.
func decodeCommandError(raw json.RawMessage) (*APIError, error) {
	var e struct {
		Error       json.RawMessage `json:"error"`
		Description json.RawMessage `json:"error_description"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		var text string // a bare message instead of the object
		if json.Unmarshal(raw, &text) == nil {
			return &APIError{Description: text}, nil
		}
		return nil, err
	}
	out := &APIError{}
	if len(e.Error) > 0 && string(e.Error) != "null" {
		out.Code = errorCode(e.Error)
	}
	if len(e.Description) > 0 && string(e.Description) != "null" {
		out.Description = errorCode(e.Description)
	}
	return out, nil
}

// methodOf names the method of a command key; the portal's own answer may
// carry keys we did not send (a command beyond the batch limit).
func methodOf(methods map[string]string, key string) string {
	if m, ok := methods[key]; ok {
		return m
	}
	return "batch command " + key
}

// decodeInt reads a number sent either as a JSON number or as a string.
func decodeInt(raw json.RawMessage) (int, error) {
	var id ID
	if err := json.Unmarshal(raw, &id); err != nil {
		return 0, err
	}
	n, err := id.Int64()
	return int(n), err
}
