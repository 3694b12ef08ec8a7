package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

var errFlaky = errors.New("flaky")

func TestDoWaitsTheScheduleThenGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := Policy{Delays: []time.Duration{0, 2 * time.Second, 6 * time.Second}}
		start := time.Now()
		var calls []time.Duration
		var retries []int
		err := p.Do(t.Context(), func(context.Context) error {
			calls = append(calls, time.Since(start))
			return errFlaky
		}, nil, func(attempt int, err error, wait time.Duration) {
			retries = append(retries, attempt)
		})

		if !errors.Is(err, errFlaky) {
			t.Fatalf("Do() = %v, want it to wrap errFlaky", err)
		}
		// Virtual time inside the bubble: the calls happen exactly at the
		// cumulative delays.
		want := []time.Duration{0, 0, 2 * time.Second, 8 * time.Second}
		if len(calls) != len(want) {
			t.Fatalf("fn called %d times, want %d", len(calls), len(want))
		}
		for i := range want {
			if calls[i] != want[i] {
				t.Errorf("call %d at %v, want %v", i+1, calls[i], want[i])
			}
		}
		if len(retries) != 3 || retries[0] != 1 || retries[2] != 3 {
			t.Errorf("onRetry attempts = %v, want [1 2 3]", retries)
		}
	})
}

func TestDoStopsOnSuccessAndOnPermanentErrors(t *testing.T) {
	errPermanent := errors.New("permanent")
	tests := []struct {
		name      string
		results   []error
		wantCalls int
		wantErr   error
	}{
		{"first try", []error{nil}, 1, nil},
		{"second try", []error{errFlaky, nil}, 2, nil},
		{"permanent", []error{errFlaky, errPermanent, nil}, 2, errPermanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				err := Default().Do(t.Context(), func(context.Context) error {
					calls++
					return tt.results[calls-1]
				}, func(err error) bool { return errors.Is(err, errFlaky) }, nil)
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
					t.Errorf("Do() = %v, want %v", err, tt.wantErr)
				}
				if calls != tt.wantCalls {
					t.Errorf("fn called %d times, want %d", calls, tt.wantCalls)
				}
			})
		})
	}
}

func TestDoReturnsWhenContextEndsDuringAWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		p := Policy{Delays: []time.Duration{time.Second, time.Minute}}
		calls := 0
		err := p.Do(ctx, func(context.Context) error {
			calls++
			return errFlaky
		}, nil, nil)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errFlaky) {
			t.Errorf("Do() = %v, want both the deadline and the last failure", err)
		}
		if calls != 2 {
			t.Errorf("fn called %d times, want 2 (the minute-long wait is cut short)", calls)
		}
	})
}

func TestDelayJitterStaysWithinBounds(t *testing.T) {
	tests := []struct {
		name    string
		rand    float64
		attempt int
		want    time.Duration
	}{
		{"zero delay gets no jitter", 0.99, 1, 0},
		{"no jitter drawn", 0, 2, 2 * time.Second},
		{"half of the jitter", 0.5, 2, 2*time.Second + 200*time.Millisecond},
		{"third retry", 0.5, 3, 6*time.Second + 600*time.Millisecond},
		{"past the schedule reuses the last delay", 0, 7, 6 * time.Second},
		{"attempt below one is the first", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Default()
			p.Rand = func() float64 { return tt.rand }
			if got := p.Delay(tt.attempt); got != tt.want {
				t.Errorf("Delay(%d) = %v, want %v", tt.attempt, got, tt.want)
			}
		})
	}
}

func TestDelayWithRealRandomnessIsAMinimum(t *testing.T) {
	p := Default()
	for range 1000 {
		d := p.Delay(2)
		if d < 2*time.Second || d >= 2400*time.Millisecond {
			t.Fatalf("Delay(2) = %v, want within [2s, 2.4s)", d)
		}
	}
}

func TestZeroPolicyNeverRetries(t *testing.T) {
	calls := 0
	err := Policy{}.Do(t.Context(), func(context.Context) error {
		calls++
		return errFlaky
	}, nil, nil)
	if !errors.Is(err, errFlaky) || calls != 1 {
		t.Errorf("Do() = %v after %d calls, want errFlaky after 1", err, calls)
	}
}
