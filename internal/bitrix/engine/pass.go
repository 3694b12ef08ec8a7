package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// A get pass is full or delta (docs/bitrix-delta.md). A full pass reads every record of the
// entity and concludes what it no longer saw deleted. After a complete full pass, a lister that
// can filter by modification time (IDScan.Modified) may run a delta pass instead: it reads only
// the records modified since the last complete pass started (on the portal's own clock, less
// Config.SkewMargin), re-reads the children of what changed, and finds deletions by comparing
// the portal's counts of ID ranges with the stored ones. A full pass is still run when asked
// (Config.Full), once Config.FullEvery has passed since the last one, after a limited pass, when
// what a pass reads changed (the fingerprint), and whenever the incremental reasoning cannot be
// trusted; the inventory and the log say which kind ran and why.

// PassKind is how a get pass reads an entity: PassFull or PassDelta.
type PassKind string

const (
	// PassFull reads every record of the entity.
	PassFull PassKind = "full"
	// PassDelta reads only what the portal changed since the last complete pass.
	PassDelta PassKind = "delta"
)

// PassDecision is the kind of a new get pass and why it is that kind.
type PassDecision struct {
	Kind PassKind
	// Reason says why, in words for the log and `bitrix status` ("asked with --full",
	// "the last full pass started 8 days ago").
	Reason string
	// Since, for a delta pass, is the modification time it reads from: the portal's clock at
	// the start of the last complete pass, less Config.SkewMargin.
	Since time.Time
}

// Delta reports whether the pass reads only what changed.
func (d PassDecision) Delta() bool { return d.Kind == PassDelta }

// Defaults of the pass settings whose zero value means "the default".
const (
	// DefaultFullEvery is how long after the last full pass a get runs a full one again when
	// Config.FullEvery is 0 (BITRIX_FULL_EVERY).
	DefaultFullEvery = 7 * 24 * time.Hour
	// DefaultSkewMargin is Config.SkewMargin's default: how far before the last pass's start a
	// delta reads from, for the portal's transactions in flight when that pass began.
	DefaultSkewMargin = 10 * time.Minute
)

// ExtractorVersion changes whenever what the engine derives from a page changes in a way a
// stored record would not show (how rows are decoded, which fields are kept): a pass after a
// change of it is full, since records read before may have been read differently.
const ExtractorVersion = "1"

// passInput is what decidePass weighs.
type passInput struct {
	// Inv is the scope's inventory before the new pass starts: the last pass, complete.
	Inv Inventory
	// NoDelta, when set, says why the lister cannot read the entity by modification time.
	NoDelta string
	// Fingerprint is what the new pass would read with (Fingerprint).
	Fingerprint string
	// PortalNow is the portal's clock now, from its answer's time block; zero when unknown.
	PortalNow time.Time
	// AnsweredAt is when the answer PortalNow is read from reached this machine: the skew is
	// the difference of the two clocks at that moment. Zero means now (an answer just received);
	// an answer asked ahead of its pass (prefetch.go) arrived earlier.
	AnsweredAt time.Time
}

// decidePass decides the kind of a new get pass of one scope (an entity, or one scan of it).
func (e *Engine) decidePass(in passInput) PassDecision {
	full := func(why string, args ...any) PassDecision {
		return PassDecision{Kind: PassFull, Reason: fmt.Sprintf(why, args...)}
	}
	inv := in.Inv
	switch {
	case in.NoDelta != "":
		return full("%s", in.NoDelta)
	case e.full:
		return full("asked with --full")
	case e.testLimit > 0:
		// A limited pass is never a baseline, and a delta of one would miss what it skipped.
		return full("this pass is limited to %d records (test_limit)", e.testLimit)
	case inv.Pass == 0 || inv.LastFullAt == nil:
		return full("no complete full pass yet")
	case !inv.Complete:
		return full("the last pass did not complete")
	case inv.Limit != nil:
		return full("the last pass was limited to %d records (test_limit)", *inv.Limit)
	case inv.PortalStartedAt == nil:
		return full("the last pass did not record the portal's clock")
	case inv.Fingerprint == nil || *inv.Fingerprint != in.Fingerprint:
		return full("what a pass reads changed since the last full pass (fields, select or extractor)")
	case inv.Kind == PassDelta && unexplainedIn(inv.Reason):
		// Its ID-range counts found records its modification filter did not return (delta_ranges.go).
		return full("the last delta pass %s", unexplainedCounts)
	}
	if age := e.now().Sub(*inv.LastFullAt); age >= e.fullEvery {
		return full("the last full pass started %s ago (a full pass is due every %s)", age.Round(time.Minute), e.fullEvery)
	}
	if !in.PortalNow.IsZero() {
		if in.PortalNow.Before(*inv.PortalStartedAt) {
			return full("the portal's clock (%s) is before the last pass's start on it (%s)",
				in.PortalNow.Format(time.RFC3339), inv.PortalStartedAt.Format(time.RFC3339))
		}
		local := in.AnsweredAt
		if local.IsZero() {
			local = e.now()
		}
		if skew := in.PortalNow.Sub(local).Abs(); skew > e.skewMargin {
			return full("the portal's clock is %s off this machine's, beyond the %s margin", skew.Round(time.Second), e.skewMargin)
		}
	}
	return PassDecision{Kind: PassDelta, Since: inv.PortalStartedAt.Add(-e.skewMargin),
		Reason: fmt.Sprintf("the last pass completed; reading what changed since %s", inv.PortalStartedAt.Format(time.RFC3339))}
}

// Fingerprint is a short hash of what a pass reads with (method, parameters, custom fields
// named, ExtractorVersion): the inventory keeps the last full pass's, and a delta pass is run
// only with the same one.
func Fingerprint(parts ...string) string {
	h := sha256.New()
	h.Write([]byte(ExtractorVersion))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// markPass records on a pass just started its kind, why, the portal's clock at its start and
// the fingerprint it reads with.
func (s Store) markPass(ctx context.Context, scope string, d PassDecision, portalStart time.Time, fingerprint string) error {
	var since, start *time.Time
	if d.Delta() {
		since = &d.Since
	}
	if !portalStart.IsZero() {
		start = &portalStart
	}
	_, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET pass_kind = $2, pass_reason = $3, delta_since = $4,
portal_started_at = $5, fingerprint = CASE WHEN $2 = 'full' THEN $6 ELSE fingerprint END, updated_at = now()
WHERE entity = $1`, scope, string(d.Kind), d.Reason, since, start, fingerprint)
	if err != nil {
		return fmt.Errorf("record the get pass of %s: %w", scope, err)
	}
	return nil
}
