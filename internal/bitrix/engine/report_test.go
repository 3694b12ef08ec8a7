package engine_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// The status report says where every entity stands, children included: its records by status,
// why the failed ones failed and which they are, its get pass, whether it is verified, which
// children wait for their parent, its custom fields; WriteText says the same for people.
func TestReportSaysWhereEachEntityStands(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 60, Groups: 6, Tasks: 300, Seed: 10})
	e := w.Engine()
	rep, err := e.Report(w.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rep.Entities), len(w.Registry.All()); got != want {
		t.Fatalf("%d entities in the report, want %d", got, want)
	}
	for _, es := range rep.Entities {
		if es.Inventory != nil && es.PassState() != "never" || es.Verified || es.ByStatus[string(engine.StatusNew)] != 0 {
			t.Errorf("%s before anything ran: %+v", es.Entity, es)
		}
	}

	// People: fields read and created, one person failed for good; teams read, not imported;
	// chores interrupted during their get.
	bad := strconv.Itoa(w.Portal.UserIDs()[7])
	w.Portal.SetUserField(w.Portal.UserIDs()[7], "PERSONAL_BIRTHDAY", "31/02/1990")
	w.Phases(e, people, "fields-get", "fields-set", "get", "set")
	if err := e.Phase(w.Ctx, people, "verify"); !errors.Is(err, engine.ErrNotVerified) {
		t.Fatalf("people verify = %v, want ErrNotVerified", err)
	}
	w.Phases(e, teams, "get")
	ctx, cancel := context.WithCancel(w.Ctx)
	defer cancel()
	interrupted := w.Engine(func(e *engine.Config) {
		e.Concurrency = 1
		e.Source = &enginetest.CancelOnCall{Source: w.Source, N: 1, Cancel: cancel}
	})
	if _, err := interrupted.Get(ctx, enginetest.Chores); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted chores get = %v", err)
	}

	rep, err = e.Report(w.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	of := map[string]engine.EntityStatus{}
	for _, es := range rep.Entities {
		of[es.Entity] = es
	}
	p := of[people]
	wantReason := `date field PERSONAL_BIRTHDAY: cannot read "31/02/1990": not a date in any format Bitrix24 sends`
	if p.ByStatus[string(engine.ImportOK)] != 59 || p.ByStatus[string(engine.ImportErr)] != 1 || p.ByStatus[string(engine.StatusNew)] != 0 {
		t.Errorf("people by status = %v, want 59 IMPORT_OK and 1 IMPORT_ERR", p.ByStatus)
	}
	if len(p.Reasons) != 1 || p.Reasons[0].Reason != wantReason || p.Reasons[0].N != 1 || p.Reasons[0].Status != string(engine.ImportErr) {
		t.Errorf("people reasons = %+v", p.Reasons)
	}
	if len(p.NotMigrated) != 1 || len(p.NotMigrated[0].IDs) != 1 || p.NotMigrated[0].IDs[0] != bad || p.NotMigrated[0].Acknowledged {
		t.Errorf("people not migrated = %+v, want person %s", p.NotMigrated, bad)
	}
	if p.Verified || p.PassState() != "pass 1 complete (60 rows)" || p.Inventory.LastVerify == nil || p.Inventory.LastVerify.Clean() {
		t.Errorf("people: verified %v, pass %q, last verify %+v", p.Verified, p.PassState(), p.Inventory.LastVerify)
	}
	if p.Fields == 0 || p.FieldsOnTarget != p.Fields {
		t.Errorf("people custom fields: %d read, %d on the target; want all of them created", p.Fields, p.FieldsOnTarget)
	}
	members := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'team_members'`)
	m := of[teamMembers]
	if m.Inventory != nil || m.VerifiedWith != teams || m.Waiting == nil || m.Waiting.Records != int64(members) ||
		m.ByStatus[string(engine.StatusNew)] != int64(members) || m.WaitingState() == "" {
		t.Errorf("team members = %+v (waiting %+v), want %d NEW waiting for their teams, verified with teams", m, m.Waiting, members)
	}
	c := of[enginetest.Chores]
	if c.Inventory == nil || c.Inventory.Complete || c.Inventory.SourceTotal == nil || c.PassState() != "pass 1 interrupted after ID "+c.Inventory.Cursor+" (50 rows)" {
		t.Fatalf("chores pass = %q, want interrupted after the first page", c.PassState())
	}
	if f := of[enginetest.Firms]; f.PassState() != "never" || f.Fields != 0 {
		t.Errorf("firms = %+v, want never read", f)
	}

	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	// Columns are as wide as the longest cell: compare the words.
	words := strings.Join(strings.Fields(text.String()), " ")
	for _, want := range []string{
		"people NEW 0 IMPORT_OK 59 IMPORT_ERR 1 ERROR_RETRY 0",
		"IMPORT_ERR ×1 " + wantReason,
		"source 60 rows; get pass 1 complete, 60 rows read verified no last verify ",
		": target holds 59 people, expected 60; 1 people records are not IMPORT_OK",
		"custom fields " + strconv.FormatInt(p.Fields, 10) + " read, " + strconv.FormatInt(p.Fields, 10) + " on the target",
		"team_members NEW " + strconv.Itoa(members),
		"verified no (with teams) waiting " + strconv.Itoa(members) + " NEW: wait for their parent, not imported",
		"source " + strconv.FormatInt(*c.Inventory.SourceTotal, 10) + " rows; get pass 1 interrupted after id " + c.Inventory.Cursor + ", 50 rows read",
		"firms NEW 0",
		"source unknown rows; get pass 0 never run, 0 rows read",
	} {
		if !strings.Contains(words, want) {
			t.Errorf("the report's text lacks %q:\n%s", want, text.String())
		}
	}
}

// Run runs every phase of a command entity in order, a verify that finds problems failing it;
// it refuses a child and an unknown entity or phase.
func TestRunRunsEveryPhaseOfAnEntity(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 30, Groups: 4, Seed: 11})
	e := w.Engine()
	tests := []struct {
		name, entity string
		want         error  // nil: the run succeeds
		wantText     string // what its error says
	}{
		{"a child", teamMembers, nil, `bitrix entity "team_members" is migrated as part of "teams"`},
		{"an unknown entity", "users", nil, `unknown bitrix entity "users" (valid: people, teams,`},
		{"prerequisites not verified", teams, engine.ErrPrerequisite, "bitrix teams set: "},
		{"a clean entity", people, nil, ""},
		{"its prerequisites verified", teams, nil, ""},
	}
	for _, tt := range tests {
		err := e.Run(w.Ctx, tt.entity)
		switch {
		case tt.wantText == "" && err != nil:
			t.Errorf("%s: run %s = %v", tt.name, tt.entity, err)
		case tt.wantText != "" && (err == nil || !strings.Contains(err.Error(), tt.wantText)):
			t.Errorf("%s: run %s = %v, want an error saying %q", tt.name, tt.entity, err, tt.wantText)
		case tt.want != nil && !errors.Is(err, tt.want):
			t.Errorf("%s: run %s = %v, want %v", tt.name, tt.entity, err, tt.want)
		}
	}
	if !w.Inventory(teams).Verified || w.Target.Count(teamMembers) != w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'team_members'`) {
		t.Error("teams not verified with every member on the target after their run")
	}
	if err := e.Phase(w.Ctx, people, "fetch"); err == nil || !strings.Contains(err.Error(), `unknown bitrix phase "fetch"`) {
		t.Errorf("an unknown phase = %v", err)
	}
	// A target that lost a person fails the run at verify.
	w.Target.Delete(people, "source:people:"+strconv.Itoa(w.Portal.UserIDs()[0]))
	if err := e.Run(w.Ctx, people); !errors.Is(err, engine.ErrNotVerified) || !strings.Contains(err.Error(), "bitrix people verify: ") {
		t.Errorf("run with a record lost on the target = %v, want ErrNotVerified at verify", err)
	}
}
