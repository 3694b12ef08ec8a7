package bitrix_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/crashtest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// The CRM and workflows killed with SIGKILL 26 times across their gets and sets (small data, so
// that the whole test takes seconds): the end is the same as an uninterrupted run's.
func TestKilledCRMRunsConverge(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes for a while")
	}
	dbtest.URL(t)
	t.Parallel()
	portal := bitrixfake.New(bitrixfake.Options{Users: 80, Seed: 53, Companies: 120, Contacts: 150, Deals: 500,
		SmartItems: 60, Workflows: 10})
	psrv := httptest.NewServer(portal)
	defer psrv.Close()
	webhook := psrv.URL + portal.WebhookPath()
	bin := crashtest.Build(t, "./testdata/crashchild")
	entities := strings.Join(append([]string{bitrix.Users}, crmEntities...), ",")

	ref := newWorld(t)
	took := startChild(t, bin, ref, webhook, strings.Split(entities, ",")...).TimedPhases(t)

	crashed := newWorld(t)
	// Each run starts at the first entity not verified yet, as the entity's own CronJob would
	// run next: what an earlier run finished stays finished, and the kills land in less time.
	unfinished := func() string {
		done := map[string]bool{}
		for _, e := range dumpRows(t, crashed.dbURL, `SELECT entity FROM bitrix_inventory WHERE verified`) {
			done[e] = true
		}
		all := strings.Split(entities, ",")
		for i, e := range all {
			if !done[e] {
				return strings.Join(all[i:], ",")
			}
		}
		return entities
	}
	rng := rand.New(rand.NewPCG(53, 2))
	var aims []string
	for _, a := range []struct {
		phase string
		kills int
	}{{"companies get", 2}, {"companies set", 3}, {"contacts get", 2}, {"contacts set", 2}, {"deals get", 3},
		{"deals set", 4}, {"deal_products get", 3}, {"deal_products set", 2}, {"smart get", 2}, {"smart set", 2},
		{"workflows get", 1}} {
		aims = append(aims, slices.Repeat([]string{a.phase}, a.kills)...)
	}
	killedIn := map[string]int{}
	for kills, runs := 0, 0; kills < len(aims); runs++ {
		if runs > 20*len(aims) {
			t.Fatalf("after %d runs only %d kills landed: %v", runs, kills, killedIn)
		}
		aim := aims[kills]
		last, killed := startChild(t, bin, crashed, webhook, strings.Split(unfinished(), ",")...).Run(t, aim, took[aim]/2+time.Millisecond, rng)
		if killed {
			kills++
			killedIn[last]++
		}
	}
	if last, _ := startChild(t, bin, crashed, webhook, strings.Split(unfinished(), ",")...).Run(t, "", 0, rng); last != "done" {
		t.Fatalf("final run ended after %q", last)
	}
	t.Logf("uninterrupted phases took %v; kills by phase: %v", took, killedIn)
	gets, sets := 0, 0
	for phase, n := range killedIn {
		switch {
		case strings.HasSuffix(phase, " get"):
			gets += n
		case strings.HasSuffix(phase, " set"):
			sets += n
		}
	}
	if gets+sets < 20 || gets == 0 || sets == 0 {
		t.Errorf("kills landed in %d gets and %d sets; want 20 or more, in both", gets, sets)
	}
	if s := crashed.target.Stats(); s.Duplicates != 0 {
		t.Errorf("%d duplicates on the target", s.Duplicates)
	}
	want, got := ref.crmContents(t), crashed.crmContents(t)
	if len(got) != len(want) || len(want) == 0 {
		t.Errorf("%d records on the target, want %d", len(got), len(want))
	}
	for key, w := range want {
		if got[key] != w {
			t.Errorf("target record %s = %s, want %s", key, got[key], w)
			break
		}
	}
	requireSameState(t, ref, crashed)
}

// crmRefFields are where CRM and workflow payloads name other records by target id.
var crmRefFields = map[string]string{
	"assignedById": bitrix.Users, "createdBy": bitrix.Users, "updatedBy": bitrix.Users, "movedBy": bitrix.Users,
	"observers": bitrix.Users, "AUTHOR_ID": bitrix.Users, "UF_CRM_1724412805": bitrix.Users, "USER_ID": bitrix.Users, "STARTED_BY": bitrix.Users, "WORKFLOW_STARTED_BY": bitrix.Users,
	"categoryId": bitrix.CRMCategories, "CATEGORY_ID": bitrix.CRMCategories, "stageId": bitrix.CRMStages,
	"previousStageId": bitrix.CRMStages, "companyId": bitrix.Companies, "companyIds": bitrix.Companies,
	"mycompanyId": bitrix.Companies, "contactId": bitrix.Contacts, "contactIds": bitrix.Contacts,
	"parentId2": bitrix.Deals, "ownerId": bitrix.Deals, "entityTypeId": bitrix.CRMTypes,
	"TEMPLATE_ID": bitrix.Workflows, "WORKFLOW_TEMPLATE_ID": bitrix.Workflows,
}

var (
	targetRef      = regexp.MustCompile(`(user_|DEAL_|COMPANY_|CONTACT_|USER=)(\d+)`)
	targetSmartRef = regexp.MustCompile(`DYNAMIC_(\d+)_(\d+)`)
)

// crmContents returns the target's CRM and workflow records by key, with every target id in
// them replaced by the key of the record it names (target ids differ between runs).
func (w *world) crmContents(t *testing.T) map[string]string {
	t.Helper()
	all := append([]string{bitrix.Users, bitrix.CRMStages, bitrix.WorkflowInstances, bitrix.WorkflowTasks}, crmEntities...)
	keyOf := map[string]map[string]string{}
	for _, entity := range all {
		keyOf[entity] = map[string]string{}
		for _, r := range w.target.Records(entity) {
			keyOf[entity][r.TargetID] = r.Key
		}
	}
	name := func(entity, id string) string {
		if k, ok := keyOf[entity][id]; ok {
			return k
		}
		return id
	}
	prefixed := map[string]string{"user_": bitrix.Users, "DEAL_": bitrix.Deals, "COMPANY_": bitrix.Companies, "CONTACT_": bitrix.Contacts,
		"USER=": bitrix.Users}
	out := map[string]string{}
	for _, entity := range all {
		if entity == bitrix.Users {
			continue
		}
		for _, r := range w.target.Records(entity) {
			var payload map[string]any
			if err := json.Unmarshal(r.Payload, &payload); err != nil {
				t.Fatal(err)
			}
			for field, to := range crmRefFields {
				switch v := payload[field].(type) {
				case string:
					payload[field] = name(to, v)
				case []any:
					for i, id := range v {
						v[i] = name(to, fmt.Sprint(id))
					}
				}
			}
			if owner, ok := map[string]string{"company": bitrix.Companies, "contact": bitrix.Contacts, "deal": bitrix.Deals}[fmt.Sprint(payload["ENTITY_TYPE"])]; ok {
				payload["ENTITY_ID"] = name(owner, fmt.Sprint(payload["ENTITY_ID"]))
			}
			b, _ := json.Marshal(payload)
			text := targetRef.ReplaceAllStringFunc(string(b), func(m string) string {
				sub := targetRef.FindStringSubmatch(m)
				return name(prefixed[sub[1]], sub[2])
			})
			text = targetSmartRef.ReplaceAllStringFunc(text, func(m string) string {
				sub := targetSmartRef.FindStringSubmatch(m)
				return name(bitrix.CRMTypes, sub[1]) + "/" + name(bitrix.Smart, sub[2])
			})
			out[r.Key] = text
		}
	}
	return out
}
