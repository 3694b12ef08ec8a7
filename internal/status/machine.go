package status

import (
	"fmt"
	"slices"
	"strings"
)

// Status is one state of a record in a pipeline, exactly as stored in the database.
type Status string

// Transition is a move from one status to another.
type Transition struct {
	From Status
	To   Status
}

// Machine describes one pipeline's state table: the statuses it may hold and which moves are
// allowed. The zero value is not usable; pipelines declare theirs as package-level values built
// by their own constructor.
type Machine struct {
	// Name is how people refer to the pipeline, e.g. "habr" in `ingest status set habr`.
	Name string
	// Table is the pipeline's state table (see the package doc for its required columns).
	Table string
	// Scope, when set, is a column that partitions the table (e.g. "entity" for Bitrix24): picks
	// and counts can be limited to one value of it.
	Scope string
	// Key, when set, is a text column naming a record within its scope the way people know it
	// (e.g. the portal's "source_id"); see Resolve.
	Key string
	// Statuses lists every status, in the order reports show them.
	Statuses []Status
	// Auto lists the moves the pipeline makes by itself. A status may move to itself (another
	// failed attempt).
	Auto []Transition
	// Manual lists the moves a person may make with `ingest status set`.
	Manual []Transition
	// Attention lists the statuses whose records need a look (failures): reports show their
	// most common reasons.
	Attention []Status
	// Retry, when set, schedules retryable failures (see Fail, PickParams.DueBy and NextDue).
	Retry *Retry
	// Acknowledgeable lists the statuses whose records a person may accept as known exceptions
	// (see Machine.Acknowledge); empty means none may be.
	Acknowledgeable []Status
	// Waiting lists statuses whose records wait for a time of their own, the way Retry.Status
	// does: an account synced until its next sync is due, a job polled again later. A move into
	// one of them sets next_attempt_at to Change.Due (NULL, due at once, when zero), and Pick
	// with DueBy picks them only once due. The table needs the next_attempt_at column (see
	// Retry); Retry.Status must not be listed here (Fail schedules it).
	Waiting []Status
	// ReasonCodes says the table has a reason_code text column: every automatic move stores
	// Change.Code (Failure.Code for Fail) in it beside last_error, so that a program finds
	// records by why they failed (Revive) without reading the wording of a message.
	ReasonCodes bool
	// InFlight says the table records the attempt in progress (see StartAttempt) in two
	// columns, attempt_started_at timestamptz and attempt_run_id bigint; every move clears them.
	InFlight bool
}

// Parse returns the status named s, or an error listing the valid ones.
func (m *Machine) Parse(s string) (Status, error) {
	if slices.Contains(m.Statuses, Status(s)) {
		return Status(s), nil
	}
	return "", fmt.Errorf("unknown %s status %q (valid: %s)", m.Name, s, m.statusList())
}

// AllowsAuto reports whether the pipeline itself may move a record from one status to another.
func (m *Machine) AllowsAuto(from, to Status) bool {
	return slices.Contains(m.Auto, Transition{from, to})
}

// AllowsManual reports whether a person may move a record from one status to another.
func (m *Machine) AllowsManual(from, to Status) bool {
	return slices.Contains(m.Manual, Transition{from, to})
}

// ManualTargets lists the statuses a person may move a record in status from to.
func (m *Machine) ManualTargets(from Status) []Status {
	var out []Status
	for _, t := range m.Manual {
		if t.From == from {
			out = append(out, t.To)
		}
	}
	return out
}

func (m *Machine) statusList() string {
	names := make([]string, len(m.Statuses))
	for i, s := range m.Statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
