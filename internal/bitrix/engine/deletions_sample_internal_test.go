package engine

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
)

// stubConfirmer answers ConfirmGone from a set of ids gone from the portal.
type stubConfirmer struct {
	Lister
	gone  map[string]bool
	asked [][]string
}

func (s *stubConfirmer) ConfirmGone(_ context.Context, _ Env, _ *Entity, ids []string) ([]string, error) {
	s.asked = append(s.asked, ids)
	var out []string
	for _, id := range ids {
		if s.gone[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// Before weighing a mass deletion the engine asks for 50 unseen records spread over all of them,
// not all of them: a permission change that hid 100,000 tasks would otherwise cost 2,000
// requests before the refusal. Records a pass missed (a page answered empty) are found there.
func TestSampleGoneAsksFiftySpreadRecords(t *testing.T) {
	unseen := make([]goneRecord, 1000)
	for i := range unseen {
		unseen[i] = goneRecord{id: int64(i + 1), sourceID: strconv.Itoa(i + 1)}
	}
	for _, c := range []struct {
		name       string
		goneBelow  int // records 1..goneBelow-1 are gone from the portal
		mostlyGone bool
	}{
		{"a page answered empty: the records are there", 1, false},
		{"a tenth gone", 101, false},
		{"nine tenths gone", 901, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			stub := &stubConfirmer{gone: map[string]bool{}}
			for i := 1; i < c.goneBelow; i++ {
				stub.gone[strconv.Itoa(i)] = true
			}
			e := build(Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			got, err := e.sampleGone(context.Background(), &Entity{Name: "things", Lister: stub}, unseen)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.mostlyGone {
				t.Errorf("mostly gone = %v, want %v", got, c.mostlyGone)
			}
			if len(stub.asked) != 1 || len(stub.asked[0]) != confirmSample {
				t.Fatalf("asked %d times (%v), want once for %d records", len(stub.asked), stub.asked, confirmSample)
			}
			if first, last := stub.asked[0][0], stub.asked[0][confirmSample-1]; first != "1" || last != "981" {
				t.Errorf("sample from %s to %s, want it spread from 1 to 981", first, last)
			}
		})
	}
}
