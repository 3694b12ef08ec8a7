package graphfake

import (
	"net/http"
	"testing"
	"time"
)

// The usage windows of budgets not called for an hour are forgotten by the sweep; the others
// are kept whole.
func TestSweepCallsForgetsIdleBudgets(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	s := New(Options{Seed: 1, GeneratedAccounts: 10, NoFixtureAccounts: true, Now: func() time.Time { return t0 }})
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range 5 {
		a := s.generated(i)
		s.usage(http.Header{}, a, "token:"+a.id, false, t0)
	}
	busy := s.generated(7)
	s.usage(http.Header{}, busy, "token:"+busy.id, false, t0.Add(90*time.Minute))
	s.sweepCalls(t0.Add(2 * time.Hour))
	if len(s.calls) != 1 || len(s.calls["token:"+busy.id]) != 1 {
		t.Fatalf("after the sweep: %v, want only the budget called within the hour", s.calls)
	}
}
