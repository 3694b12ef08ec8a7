package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/ingest-dev/ingest/internal/httplimit"
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
// Errors, or in neither: when halt stopped the batch before it, when the
// portal left it out of the answer, or when it failed with an error the
// answer did not tie to a command (Unmatched).
type BatchResult struct {
	Results map[string]json.RawMessage
	Errors  map[string]*APIError
	Totals  map[string]int
	Nexts   map[string]int
	Times   map[string]Time
	// Unmatched are the errors of result_error that could not be tied to a
	// command: an unkeyed list of errors, or keys the batch did not send.
	// They are never reported as any one command's error (a command could
	// then be taken for unreachable because of another's refusal); the
	// commands without a result are to be sent again (Settle).
	Unmatched []*APIError
	// Time is the timing of the batch call itself.
	Time Time

	halted  bool              // sent with halt, and a command failed
	methods map[string]string // command key: method
	missing map[string]error  // commands Settle gave up on
}

// Response returns the answer of one command as if it had been called on
// its own: its Response, its *APIError, or a *MissingError (errors.Is
// ErrNoResult; also ErrNotExecuted when halt stopped the batch before it).
func (b *BatchResult) Response(key string) (*Response, error) {
	if e, ok := b.Errors[key]; ok {
		return nil, e
	}
	result, ok := b.Results[key]
	if !ok {
		if err, ok := b.missing[key]; ok {
			return nil, err
		}
		return nil, &MissingError{Key: key, Method: methodOf(b.methods, key), Halted: b.halted && len(b.Unmatched) == 0,
			Unmatched: b.Unmatched, Tries: 1}
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
	return c.batch(ctx, cmds, halt, true)
}

// batch is Batch; split says whether an answer over the cap may be asked again in parts
// (splitTooLarge), which the parts themselves are not.
func (c *Client) batch(ctx context.Context, cmds []Command, halt, split bool) (*BatchResult, error) {
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
	if split && errors.Is(err, httplimit.ErrTooLarge) && idempotent && !halt && independent(cmds) {
		return c.splitTooLarge(ctx, cmds, err)
	}
	if err != nil {
		return nil, err
	}
	res, err := decodeBatch(env, cmds, methods)
	if err != nil {
		return nil, err
	}
	res.halted = halt && (len(res.Errors) > 0 || len(res.Unmatched) > 0)
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
	// An operating-time refusal that names no command was one of the methods left without a
	// result: pause each of them, since sending them again at once would be refused again.
	for _, e := range res.Unmatched {
		if !e.codeIs(CodeOperationTimeLimit) {
			continue
		}
		c.stats.operationLimit.Add(1)
		paused := map[string]bool{}
		for _, cmd := range cmds {
			if _, ok := res.Results[cmd.Key]; ok || paused[cmd.Method] {
				continue
			}
			if _, ok := res.Errors[cmd.Key]; ok {
				continue
			}
			paused[cmd.Method] = true
			until := c.ops.blocked(cmd.Method, c.now())
			c.log.Warn("bitrix method blocked by an operating time limit the batch did not tie to a command, pausing it",
				"method", cmd.Method, "until", until)
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
