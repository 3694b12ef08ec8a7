package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// An entity's hooks see the run through Env: Finish adjusts the payload set sends (and verify
// compares), Verify adds checks of the entity's own after the engine's, with the portal, the
// target and the store at hand, and Advice adds lines to the status report.
func TestEntityHooksExtendSetVerifyAndTheReport(t *testing.T) {
	t.Parallel()
	ents := enginetest.Entities()
	var team *engine.Entity
	for _, ent := range ents {
		if ent.Name == teams {
			team = ent
		}
	}
	team.Finish = func(fields map[string]json.RawMessage, r engine.Record, _ *engine.Refs) error {
		fields["MIGRATED_FROM"] = engine.MustJSON("portal team " + r.SourceID)
		return nil
	}
	// A team is not verified while the portal names it "secret": the entity's own rule.
	team.Verify = func(ctx context.Context, env engine.Env, ent *engine.Entity, r *engine.VerifyReport) error {
		ids, err := env.Store().SourceIDs(ctx, ent.Name)
		if err != nil {
			return err
		}
		onTarget, err := env.Target().Count(ctx, ent.Name)
		if err != nil {
			return err
		}
		resp, err := env.Source().Call(ctx, "sonet_group.get", map[string]any{"FILTER": map[string]any{"%NAME": "secret"}, "IS_ADMIN": "Y"})
		if err != nil {
			return err
		}
		rows, err := resp.Rows()
		if err != nil {
			return err
		}
		env.Log().Info("team check", "entity", env.Entity(ent.Name).Name, "stored", len(ids), "on_target", onTarget, "run", env.RunID())
		if len(rows) > 0 {
			r.Problem("%d teams are named secret on the portal", len(rows))
		}
		return nil
	}
	team.Advice = func(ctx context.Context, env engine.Env, ent *engine.Entity) ([]string, error) {
		ids, err := env.Store().SourceIDs(ctx, ent.Name)
		return []string{fmt.Sprintf("ask the owners of the %d teams", len(ids))}, err
	}
	reg, err := engine.NewRegistry(ents...)
	if err != nil {
		t.Fatal(err)
	}
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: 30, Groups: 4, Seed: 15}, Registry: reg})
	e := w.Engine()
	w.Migrate(e, people, teams)
	first := strconv.Itoa(w.Portal.GroupIDs()[0])
	got, ok := w.Target.Lookup(teams, "source:teams:"+first)
	if !ok || !strings.Contains(string(got.Payload), `"MIGRATED_FROM":"portal team `+first+`"`) {
		t.Errorf("the target's team %s = %s, want the field Finish added", first, got.Payload)
	}
	if !strings.Contains(w.Log.String(), "msg=\"team check\" entity=teams stored=4 on_target=4") {
		t.Error("the Verify hook did not run with the store and the target")
	}

	w.Portal.SetGroupField(w.Portal.GroupIDs()[1], "NAME", "a secret team")
	err = e.Phase(w.Ctx, teams, "verify")
	if !errors.Is(err, engine.ErrNotVerified) || !strings.Contains(err.Error(), "1 teams are named secret on the portal") {
		t.Errorf("verify = %v, want ErrNotVerified with the hook's problem", err)
	}
	rep, err := e.Report(w.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rep.Entities, func(es engine.EntityStatus) bool { return es.Entity == teams })
	if i < 0 || !slices.Equal(rep.Entities[i].Advice, []string{"ask the owners of the 4 teams"}) || rep.Entities[i].Verified {
		t.Errorf("teams in the report = %+v, want the hook's advice and not verified", rep.Entities[i])
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(text.String()), " "), "advice ask the owners of the 4 teams") {
		t.Errorf("the report's text has no advice:\n%s", text.String())
	}
}
