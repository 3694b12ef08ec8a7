package engine

import (
	"testing"
	"time"
)

// A delta pass whose counts found records its modification filter did not return is followed by
// a full pass; one that found nothing of the kind by a delta.
func TestDecidePassAfterUnexplainedCounts(t *testing.T) {
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	e := &Engine{now: func() time.Time { return now }, fullEvery: DefaultFullEvery, skewMargin: DefaultSkewMargin}
	lastFull, started := now.Add(-48*time.Hour), now.Add(-time.Hour)
	fp := Fingerprint("crm.item.list")
	for _, c := range []struct {
		name   string
		kind   PassKind
		reason string
		want   PassKind
	}{
		{"a delta that explained its counts", PassDelta, "the last pass completed; reading what changed since ...", PassDelta},
		{"a delta that did not", PassDelta, "the last pass completed; " + unexplainedCounts + " (1 of 4 ID ranges)", PassFull},
		{"a full pass", PassFull, "asked with --full", PassDelta},
	} {
		t.Run(c.name, func(t *testing.T) {
			inv := Inventory{Pass: 3, Complete: true, LastFullAt: &lastFull, PortalStartedAt: &started, Fingerprint: &fp,
				Kind: c.kind, Reason: &c.reason}
			d := e.decidePass(passInput{Inv: inv, Fingerprint: fp})
			if d.Kind != c.want {
				t.Errorf("after %s: %s (%s), want %s", c.name, d.Kind, d.Reason, c.want)
			}
		})
	}
}
