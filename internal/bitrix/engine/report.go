package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// MaxListed bounds every list in a verify report; the counts stay exact.
const MaxListed = 50

// VerifyReport is what verify found (seed 000 "<entity>-verify", seed 001 "Верификация"). It is
// stored in the inventory, clean or not, and shown by `ingest bitrix status`.
type VerifyReport struct {
	Entity string    `json:"entity"`
	At     time.Time `json:"at"`
	// SourceCount is the portal's count of the entity at verify time.
	SourceCount int64 `json:"source_count"`
	// Expected is how many records the target must hold: SourceCount, or under test_limit the
	// records the limited get read (TestLimit is then set).
	Expected  int64 `json:"expected"`
	TestLimit *int  `json:"test_limit,omitempty"`
	// TargetCount is import.<entity>.count.
	TargetCount int64 `json:"target_count"`
	// ByStatus counts the entity's records by status.
	ByStatus map[string]int64 `json:"by_status"`
	// NotImported lists records not in IMPORT_OK, with the reason (up to 50).
	NotImported []RecordIssue `json:"not_imported,omitempty"`
	// UnresolvedRefs lists records with a reference (an owner) that has no target id, or
	// that the target's copy names differently from the id map (up to 50).
	UnresolvedRefs []RecordIssue `json:"unresolved_refs,omitempty"`
	// References counts, for references that a record holds in a list (the participants of one),
	// how many have a target id, and lists the records with some that do not.
	References []RefCoverage `json:"references,omitempty"`
	// Unreachable lists the records the webhook's user cannot read, with the portal's refusal
	// (up to 50); UnreachableCount counts them all. They are a known limit of what can be
	// migrated, not a problem of this migration: they do not keep the entity from being
	// verified.
	Unreachable      []RecordIssue `json:"unreachable,omitempty"`
	UnreachableCount int           `json:"unreachable_count,omitempty"`
	// UnreachableBy counts them by entity, where the family has several; a family of one entity
	// counts them in UnreachableCount alone.
	UnreachableBy map[string]int `json:"unreachable_by,omitempty"`
	// Checked counts the IMPORT_OK records compared, every one of them, with the target's
	// listing by content hash (import.<entity>.list); Missing, Extra and Differing name what that
	// found (up to 50 each, with exact counts): records the target lacks, records it holds that
	// are not IMPORT_OK here, and records whose content differs, field by field.
	Checked        int           `json:"checked"`
	Missing        []RecordIssue `json:"missing,omitempty"`
	MissingCount   int           `json:"missing_count,omitempty"`
	Extra          []RecordIssue `json:"extra,omitempty"`
	ExtraCount     int           `json:"extra_count,omitempty"`
	Differing      []Mismatch    `json:"differing,omitempty"`
	DifferingCount int           `json:"differing_count,omitempty"`
	// Sampled is how many IMPORT_OK records were compared field by field; Mismatches lists
	// every difference found (up to 50).
	Sampled    int        `json:"sampled"`
	Mismatches []Mismatch `json:"mismatches,omitempty"`
	// MismatchedRecords counts sampled records with at least one difference.
	MismatchedRecords int `json:"mismatched_records"`
	// Acknowledged lists the records people accepted as known exceptions, with who and why
	// (up to 50; AcknowledgedCount counts them all), and AcknowledgedWaiting counts the child
	// records that wait for an acknowledged parent. They do not keep the entity from being
	// verified; any other record not migrated does.
	Acknowledged        []RecordIssue `json:"acknowledged,omitempty"`
	AcknowledgedCount   int64         `json:"acknowledged_count,omitempty"`
	AcknowledgedWaiting int64         `json:"acknowledged_waiting,omitempty"`
	// Details are figures of the entity's own (records by the path they were read by, records
	// without a proven audience), and Notes what it says about them in words; neither is a problem.
	Details map[string]int64 `json:"details,omitempty"`
	Notes   []string         `json:"notes,omitempty"`
	// Problems says in words what keeps the entity from being verified; none means clean.
	Problems []string `json:"problems"`

	// Children compares, for each child entity (members, messages, running instances...), the portal's count, the records read and the target's count, and lists the
	// records not imported and the parents whose children fall short (verify_family.go).
	Children []ChildCounts `json:"children,omitempty"`
	// DroppedLinks lists references to records the portal no longer has, which set dropped
	// instead of failing the record (a record deleted since; up to 50, DroppedLinksCount
	// counts them all). They do not keep the entity from being verified.
	DroppedLinks      []RecordIssue `json:"dropped_links,omitempty"`
	DroppedLinksCount int           `json:"dropped_links_count,omitempty"`
	// DeletedAtSource lists (up to 50) the records of the family the portal deleted that the target
	// still holds, by portal id (deletions_verify.go); DeletedAtSourceCount counts them all.
	DeletedAtSource      []RecordIssue `json:"deleted_at_source,omitempty"`
	DeletedAtSourceCount int64         `json:"deleted_at_source_count,omitempty"`
	// Untranslated lists values sent as the portal has them because no mapping can be proved (a
	// template's reference to a record that was not migrated; up to 50,
	// UntranslatedCount counts them all). They do not keep the entity from being verified.
	Untranslated      []RecordIssue `json:"untranslated,omitempty"`
	UntranslatedCount int           `json:"untranslated_count,omitempty"`
	// RenamedFields lists the custom fields the target names differently from the portal, and
	// why (its naming rules: prefix, length, characters).
	RenamedFields []string `json:"renamed_fields,omitempty"`
	// NotMigrated names what the entity's migration leaves behind by design (activities, the
	// running state): not a problem, but never silently absent.
	NotMigrated []string `json:"not_migrated,omitempty"`

	// counted holds the records already counted in verify_sample_mismatch_total ("entity:id"),
	// so a record the full comparison and the sample both find counts once.
	counted map[string]bool
}

// countMismatch reports whether a mismatched record is counted for the first time in this
// verify (and marks it counted).
func (r *VerifyReport) countMismatch(entity, sourceID string) bool {
	if r.counted == nil {
		r.counted = map[string]bool{}
	}
	k := entity + ":" + sourceID
	if r.counted[k] {
		return false
	}
	r.counted[k] = true
	return true
}

// RecordIssue names one record and what is wrong with it.
type RecordIssue struct {
	Entity   string `json:"entity"`
	SourceID string `json:"source_id"`
	Status   string `json:"status,omitempty"`
	Reason   string `json:"reason"`
	// AcknowledgedBy and AcknowledgedReason are set for a record a person accepted as a known
	// exception (`ingest status ack`).
	AcknowledgedBy     string `json:"acknowledged_by,omitempty"`
	AcknowledgedReason string `json:"acknowledged_reason,omitempty"`
	// Waiting counts the child records (of a parent not imported) that are not
	// imported because this record is not: they are listed with it, not apart, and
	// acknowledging it excuses them too.
	Waiting int64 `json:"waiting,omitempty"`
}

// RefCoverage counts the values of one list reference (the participants of a record) over the
// records that hold it, how many have a target id, and lists the records with values that do
// not (up to 50).
type RefCoverage struct {
	Entity   string         `json:"entity"`
	Field    string         `json:"field"`
	Refers   string         `json:"refers"`
	Total    int64          `json:"total"`
	Mapped   int64          `json:"mapped"`
	Unmapped []UnmappedRefs `json:"unmapped,omitempty"`
}

// UnmappedRefs names a record and the values of its reference that have no target id.
type UnmappedRefs struct {
	SourceID string   `json:"source_id"`
	Values   []string `json:"values"`
}

// Mismatch is one field that differs between a record and the target's copy.
type Mismatch struct {
	Entity   string `json:"entity"`
	SourceID string `json:"source_id"`
	TargetID string `json:"target_id,omitempty"`
	Field    string `json:"field"`
	Want     string `json:"want"`
	Got      string `json:"got"`
}

// Clean reports whether verify found nothing wrong.
func (r VerifyReport) Clean() bool { return len(r.Problems) == 0 }

// Summary is the report in one line, with the records out of reach.
func (r VerifyReport) Summary() string {
	s := strings.Join(r.Problems, "; ")
	if r.Clean() {
		s = fmt.Sprintf("clean: %d on target of %d expected, %d records compared by content hash (every one imported, children included), %d of them field by field",
			r.TargetCount, r.Expected, r.Checked, r.Sampled)
		for _, c := range r.Children {
			if c.Summary != "" {
				s += fmt.Sprintf("; %d %s on target of %d read", c.Target, c.Summary, c.Read)
			}
		}
	}
	switch {
	case len(r.UnreachableBy) > 0:
		for _, ent := range SortedKeys(r.UnreachableBy) {
			s += fmt.Sprintf("; %d %s out of the webhook user's reach (listed, not migrated)", r.UnreachableBy[ent], ent)
		}
	case r.UnreachableCount > 0:
		s += fmt.Sprintf("; %d %s out of the webhook user's reach (listed, not migrated)", r.UnreachableCount, r.Entity)
	}
	if r.DeletedAtSourceCount > 0 {
		s += fmt.Sprintf("; %d records deleted on the portal are kept on the target (listed)", r.DeletedAtSourceCount)
	}
	if r.DroppedLinksCount > 0 {
		s += fmt.Sprintf("; %d links to records the portal does not show were dropped (listed)", r.DroppedLinksCount)
	}
	if r.UntranslatedCount > 0 {
		s += fmt.Sprintf("; %d values kept untranslated, no mapping provable (listed)", r.UntranslatedCount)
	}
	if len(r.NotMigrated) > 0 {
		s += fmt.Sprintf("; %d kinds of data not migrated by design (listed in the report)", len(r.NotMigrated))
	}
	for _, k := range SortedKeys(r.Details) {
		s += fmt.Sprintf("; %s %d", strings.ReplaceAll(k, "_", " "), r.Details[k])
	}
	if r.AcknowledgedCount > 0 {
		s += fmt.Sprintf("; %d records acknowledged as known exceptions", r.AcknowledgedCount)
		if r.AcknowledgedWaiting > 0 {
			s += fmt.Sprintf(" (%d records wait for them)", r.AcknowledgedWaiting)
		}
	}
	return s
}

// ErrNotVerified is returned (wrapped) by Run when verify finds problems.
var ErrNotVerified = errors.New("verify found problems")

// Problem adds to the report what keeps the entity from being verified, formatted as by
// fmt.Sprintf: any problem makes the report unclean and leaves VERIFIED unset.
func (r *VerifyReport) Problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// diffPayloads lists the fields whose values differ between two JSON objects, in field order.
// Values are compared in canonical form, so formatting and key order do not count.
func diffPayloads(shape *shapeSpec, want, got json.RawMessage) ([]Mismatch, error) {
	w, err := FieldsOf(want)
	if err != nil {
		return nil, err
	}
	g, err := FieldsOf(got)
	if err != nil {
		return nil, fmt.Errorf("target payload: %w", err)
	}
	// Both sides in their canonical form: a record the target got before payloads were canonical
	// (its "no value" as "", its amount as "5000.00") holds the same values as what set sends now,
	// and another shape of "no value" is no difference. A difference is reported with the
	// target's value as it holds it.
	held := maps.Clone(g)
	if shape != nil {
		if err := shape.canonicalize(w); err != nil {
			return nil, err
		}
		if err := shape.canonicalize(g); err != nil {
			return nil, fmt.Errorf("target payload: %w", err)
		}
	}
	names := SortedKeys(w)
	for name := range g {
		if _, ok := w[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []Mismatch
	for _, name := range names {
		a, b := canonical(w[name]), canonical(g[name])
		if !bytes.Equal(a, b) {
			out = append(out, Mismatch{Field: name, Want: clip(a), Got: clip(canonical(held[name]))})
		}
	}
	return out, nil
}

// canonical re-encodes a JSON value with sorted keys; an absent value stays empty.
func canonical(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

func clip(b []byte) string {
	if b == nil {
		return "(absent)"
	}
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
