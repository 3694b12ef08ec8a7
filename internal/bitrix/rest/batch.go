package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/rawjson"
)

// MaxBatch is the most commands one batch may carry; the portal fails the
// ones beyond it with ERROR_BATCH_LENGTH_EXCEEDED.
const MaxBatch = 50

// Command is one call inside a batch.
type Command struct {
	// Key names the command in the answer and in references; letters,
	// digits, "_" and "-", unique within the batch.
	Key    string
	Method string
	// Params are encoded with BuildQuery. A string value may be or contain
	// a reference to an earlier command's answer, like
	// "$result[page0][49][ID]"; see Ref.
	Params any
}

// Ref returns a reference to a value in the answer of the command with the
// given key, for use as a parameter of a later command of the same batch:
// Ref("page0", "49", "ID") is "$result[page0][49][ID]". The portal replaces
// it before running the later command. Caveat from the portal's code: when
// the path does not resolve (page0 had fewer than 50 rows) the reference is
// not an error; the command runs with a wrong value, so the answers of
// commands after a short page must be discarded, and chains should be sent
// with halt.
func Ref(key string, path ...string) string {
	var b strings.Builder
	b.WriteString("$result[")
	b.WriteString(key)
	b.WriteByte(']')
	for _, p := range path {
		b.WriteByte('[')
		b.WriteString(p)
		b.WriteByte(']')
	}
	return b.String()
}

// BatchResult is the answer of a batch. A command appears in Results or in
// Errors, or in neither when halt stopped the batch before it.
type BatchResult struct {
	Results map[string]json.RawMessage
	Errors  map[string]*APIError
	Totals  map[string]int
	Nexts   map[string]int
	Times   map[string]Time
	// Time is the timing of the batch call itself.
	Time Time
}

// Response returns the answer of one command as if it had been called on
// its own: its Response, its *APIError, or ErrNotExecuted.
func (b *BatchResult) Response(key string) (*Response, error) {
	if e, ok := b.Errors[key]; ok {
		return nil, e
	}
	result, ok := b.Results[key]
	if !ok {
		return nil, fmt.Errorf("command %s: %w", key, ErrNotExecuted)
	}
	r := &Response{Result: result, Time: b.Times[key]}
	if n, ok := b.Totals[key]; ok {
		r.Total = &n
	}
	if n, ok := b.Nexts[key]; ok {
		r.Next = &n
	}
	return r, nil
}

var commandKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Batch runs up to MaxBatch commands in one HTTP request, in order. With
// halt, the portal stops at the first failing command. The whole batch
// counts as one request for the portal's rate limit. It is retried after
// 5xx answers and network failures only when every command is a read.
// Command failures are not errors of Batch: they are in the result's
// Errors.
func (c *Client) Batch(ctx context.Context, cmds []Command, halt bool) (*BatchResult, error) {
	if len(cmds) == 0 || len(cmds) > MaxBatch {
		return nil, fmt.Errorf("bitrix batch: %d commands, want 1 to %d", len(cmds), MaxBatch)
	}
	methods := make(map[string]string, len(cmds))
	gate := []string{"batch"}
	idempotent := true
	for _, cmd := range cmds {
		if !commandKey.MatchString(cmd.Key) {
			return nil, fmt.Errorf("bitrix batch: invalid command key %q", cmd.Key)
		}
		if _, dup := methods[cmd.Key]; dup {
			return nil, fmt.Errorf("bitrix batch: duplicate command key %q", cmd.Key)
		}
		if err := checkMethod(cmd.Method); err != nil {
			return nil, err
		}
		if strings.EqualFold(cmd.Method, "batch") {
			return nil, errors.New("bitrix batch: a batch cannot contain a batch")
		}
		methods[cmd.Key] = cmd.Method
		gate = append(gate, cmd.Method)
		idempotent = idempotent && c.readOnly(cmd.Method)
	}
	body, err := encodeBatch(cmds, halt)
	if err != nil {
		return nil, err
	}
	env, err := c.send(ctx, "batch", gate, body, idempotent)
	if err != nil {
		return nil, err
	}
	res, err := decodeBatch(env, methods)
	if err != nil {
		return nil, err
	}
	// In command order, so that for a method called several times the
	// last, highest reading is the one that stays.
	for _, cmd := range cmds {
		if t, ok := res.Times[cmd.Key]; ok && (t.Operating > 0 || t.OperatingResetAt > 0) {
			c.observe(cmd.Method, t)
		}
	}
	for _, e := range res.Errors {
		if e.codeIs(CodeOperationTimeLimit) {
			c.stats.operationLimit.Add(1)
			until := c.ops.blocked(e.Method, c.now())
			c.log.Warn("bitrix method blocked by its operating time limit, pausing it", "method", e.Method, "until", until)
		}
	}
	return res, nil
}

// encodeBatch writes {"halt":0|1,"cmd":{key:"method?query",...}} with the
// commands in the given order: the portal runs them in the order of the
// JSON object, and a reference must follow the command it points to.
func encodeBatch(cmds []Command, halt bool) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"halt":`)
	if halt {
		b.WriteByte('1')
	} else {
		b.WriteByte('0')
	}
	b.WriteString(`,"cmd":{`)
	for i, cmd := range cmds {
		query, err := BuildQuery(cmd.Params)
		if err != nil {
			return nil, fmt.Errorf("bitrix batch command %s: %w", cmd.Key, err)
		}
		line := cmd.Method
		if query != "" {
			line += "?" + query
		}
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(cmd.Key)
		v, _ := json.Marshal(line)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteString("}}")
	return b.Bytes(), nil
}

// section is one part of a batch answer keyed by command. PHP sends an
// empty one as [] and, when the command keys are 0, 1, 2..., the whole
// section as a JSON list; both are accepted.
type section map[string]json.RawMessage

func (s *section) UnmarshalJSON(b []byte) error {
	if isEmptyJSON(b) {
		*s = nil
		return nil
	}
	return s.split(b)
}

// split reads a section from bytes already validated (they are part of a decoded answer).
func (s *section) split(b []byte) error {
	out := section{}
	if list, err := rawjson.Elements(b); err == nil {
		for i, v := range list {
			out[strconv.Itoa(i)] = v
		}
	} else if err := rawjson.Members(b, func(k string, v json.RawMessage) { out[k] = v }); err != nil {
		return fmt.Errorf("want an object or a list, got %.40s", b)
	}
	*s = out
	return nil
}

type batchPayload struct {
	Result      section `json:"result"`
	ResultError section `json:"result_error"`
	ResultTotal section `json:"result_total"`
	ResultNext  section `json:"result_next"`
	ResultTime  section `json:"result_time"`
}

func decodeBatch(env *envelope, methods map[string]string) (*BatchResult, error) {
	// env.Result was validated with the whole answer: split it instead of decoding it again.
	var p batchPayload
	parts := map[string]*section{"result": &p.Result, "result_error": &p.ResultError, "result_total": &p.ResultTotal,
		"result_next": &p.ResultNext, "result_time": &p.ResultTime}
	var splitErr error
	err := rawjson.Members(env.Result, func(k string, v json.RawMessage) {
		if sec, ok := parts[k]; ok && !isEmptyJSON(v) && splitErr == nil {
			splitErr = sec.split(v)
		}
	})
	if err = errors.Join(err, splitErr); err != nil {
		return nil, fmt.Errorf("bitrix batch: decode answer: %w", err)
	}
	res := &BatchResult{
		Results: map[string]json.RawMessage(p.Result),
		Errors:  make(map[string]*APIError, len(p.ResultError)),
		Totals:  make(map[string]int, len(p.ResultTotal)),
		Nexts:   make(map[string]int, len(p.ResultNext)),
		Times:   make(map[string]Time, len(p.ResultTime)),
		Time:    env.Time,
	}
	if res.Results == nil {
		res.Results = map[string]json.RawMessage{}
	}
	for key, raw := range p.ResultError {
		var e struct {
			Error       json.RawMessage `json:"error"`
			Description string          `json:"error_description"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("bitrix batch: decode error of command %s: %w", key, err)
		}
		res.Errors[key] = &APIError{Method: methodOf(methods, key), Code: errorCode(e.Error), Description: e.Description}
	}
	for key, raw := range p.ResultTotal {
		n, err := decodeInt(raw)
		if err != nil {
			return nil, fmt.Errorf("bitrix batch: total of command %s: %w", key, err)
		}
		res.Totals[key] = n
	}
	for key, raw := range p.ResultNext {
		n, err := decodeInt(raw)
		if err != nil {
			return nil, fmt.Errorf("bitrix batch: next of command %s: %w", key, err)
		}
		res.Nexts[key] = n
	}
	for key, raw := range p.ResultTime {
		var t Time
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("bitrix batch: time of command %s: %w", key, err)
		}
		res.Times[key] = t
	}
	return res, nil
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
