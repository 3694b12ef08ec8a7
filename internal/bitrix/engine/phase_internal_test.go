package engine

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

func TestPhasesInRunOrder(t *testing.T) {
	t.Parallel()
	want := []Phase{PhaseFieldsGet, PhaseFieldsSet, PhaseGet, PhaseSet, PhaseVerify}
	if got := Phases(); !slices.Equal(got, want) {
		t.Fatalf("Phases() = %v, want %v", got, want)
	}
	// A caller's copy is its own: the order Run follows cannot be changed from outside.
	got := Phases()
	got[0] = "x"
	if Phases()[0] != PhaseFieldsGet {
		t.Error("changing the slice Phases returned changed the engine's phases")
	}
}

func TestParsePhase(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		want    Phase
		wantErr bool
	}{
		{"fields-get", PhaseFieldsGet, false},
		{"fields-set", PhaseFieldsSet, false},
		{"get", PhaseGet, false},
		{"set", PhaseSet, false},
		{"verify", PhaseVerify, false},
		{"run", "", true}, // a command that runs the phases, not one of them
		{"Get", "", true},
		{"", "", true},
	}
	for _, c := range cases {
		got, err := ParsePhase(c.in)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("ParsePhase(%q) = %q, %v; want %q (error %v)", c.in, got, err, c.want, c.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "fields-get, fields-set, get, set, verify") {
			t.Errorf("ParsePhase(%q): %v; want the valid phases listed", c.in, err)
		}
	}
}

func TestPhaseHelp(t *testing.T) {
	t.Parallel()
	seen := map[string]Phase{}
	for _, p := range Phases() {
		h := p.Help()
		if h == "" {
			t.Errorf("%s has no help", p)
		}
		if other, dup := seen[h]; dup {
			t.Errorf("%s and %s share the help %q", p, other, h)
		}
		seen[h] = p
	}
	if h := Phase("run").Help(); h != "" {
		t.Errorf(`Phase("run").Help() = %q; want none: run is no phase`, h)
	}
	if !strings.Contains(PhaseGet.Help(), "resumes") || !strings.Contains(PhaseVerify.Help(), "VERIFIED") {
		t.Errorf("get: %q, verify: %q; want what each does", PhaseGet.Help(), PhaseVerify.Help())
	}
}

// TestPhaseResolvesItsNames runs Engine.Phase by name: an unknown phase or entity is refused
// listing the valid ones, before anything runs; a known one runs on the registered entity (an
// entity without custom fields has nothing to do in fields-get, so no database is needed).
func TestPhaseResolvesItsNames(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	cfg := validConfig(t)
	cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Phase(ctx, "users", "gett"); err == nil || !strings.Contains(err.Error(), "fields-get, fields-set, get, set, verify") {
		t.Errorf("unknown phase: %v; want the valid phases listed", err)
	}
	if err := e.Phase(ctx, "chairs", PhaseGet); err == nil || !strings.Contains(err.Error(), `"chairs" (valid: users)`) {
		t.Errorf("unknown entity: %v; want the registered entities listed", err)
	}
	if err := e.Run(ctx, "chairs"); err == nil || !strings.Contains(err.Error(), "valid: users") {
		t.Errorf("run of an unknown entity: %v; want the registered entities listed", err)
	}
	if logs.Len() != 0 {
		t.Errorf("refused phases logged %q; want nothing run", logs.String())
	}
	if err := e.Phase(ctx, "users", "fields-get"); err != nil {
		t.Fatalf("users fields-get: %v", err)
	}
	if !strings.Contains(logs.String(), "nothing to do") || !strings.Contains(logs.String(), "entity=users phase=fields-get") {
		t.Errorf("log %q; want users' fields-get to say it has nothing to do", logs.String())
	}
}
