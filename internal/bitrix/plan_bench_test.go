package bitrix_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// BenchmarkPlanVersusGet runs `bitrix plan` against a fake portal holding every entity, then
// the get of every entity in migration order, planning again just before each, and logs per
// entity the records and calls both plans foretold next to what get read and sent
// (docs/benchmarks.md; run with -test.v, or the table is cut to its first lines). It reports the plan's own
// calls and the totals of both. The portal has no rate limit and no answer delay: only calls
// are compared here; their time at the rate is the plan's calls / 2 s.
func BenchmarkPlanVersusGet(b *testing.B) {
	for range b.N {
		b.StopTimer()
		ctx := context.Background()
		pool := dbtest.Pool(b)
		portal := bitrixfake.New(bitrixfake.Options{Seed: 71, Users: 20_000, Groups: 200, Chats: 100, MessagesPerChat: 120,
			Posts: 1_000, Tasks: 5_000, Companies: 1_000, Contacts: 2_000, Deals: 10_000, SmartItems: 500, Workflows: 10})
		srv := httptest.NewServer(portal)
		src, err := rest.New(srv.URL+portal.WebhookPath(), rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1), Logger: quietLog()})
		if err != nil {
			b.Fatal(err)
		}
		e := benchEngine(b, engine.Config{Registry: bitrix.Catalog(), Pool: pool, Source: src, Log: quietLog(), Metrics: metrics.New(), Actor: "bench"})
		b.StartTimer()
		p, err := e.Plan(ctx, rest.DefaultRate())
		if err != nil {
			b.Fatal(err)
		}
		plans := byEntity(p)
		var rows []string
		getCalls := 0
		for _, ent := range bitrix.Catalog().Commands() {
			// Planned again just before the entity's get: walks and dictionaries take their keys
			// from what earlier gets read, which the first plan could not see yet.
			again, err := e.Plan(ctx, rest.DefaultRate())
			if err != nil {
				b.Fatal(err)
			}
			now := byEntity(again)
			before := portal.Stats().Requests
			st, err := e.Get(ctx, ent.Name)
			if err != nil {
				b.Fatal(err)
			}
			calls := portal.Stats().Requests - before
			getCalls += calls
			first, last := 0, 0
			var read, planFirst, planLast []string
			for _, member := range bitrix.Catalog().Family(ent) {
				first += plans[member.Name].Calls
				last += now[member.Name].Calls
				read = append(read, itoa(st.Of(member.Name).Rows))
				planFirst = append(planFirst, itoa(int(plans[member.Name].Records)))
				planLast = append(planLast, itoa(int(now[member.Name].Records)))
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %d | %d | %d |", ent.Name, strings.Join(planFirst, " / "),
				strings.Join(planLast, " / "), strings.Join(read, " / "), first, last, calls))
		}
		b.StopTimer()
		srv.Close()
		b.Logf("plan: %d calls of its own, %d calls foretold, %.1f s at %s\n"+
			"| entity | records planned first (with children) | planned just before get | read | calls planned first | just before | sent |\n"+
			"|---|---|---|---|---|---|---|\n%s",
			p.PlanCalls, p.Calls, p.Seconds, p.Rate, strings.Join(rows, "\n"))
		b.ReportMetric(float64(p.PlanCalls), "plan_own_calls")
		b.ReportMetric(float64(p.Calls), "planned_calls")
		b.ReportMetric(float64(getCalls), "get_calls")
		b.StartTimer()
	}
}

// byEntity sums a plan's lines per entity: a child read two ways (task comments: by a fetch per
// old-card task and by the task chats' walk) has a line for each.
func byEntity(p engine.Plan) map[string]engine.EntityPlan {
	out := map[string]engine.EntityPlan{}
	for _, ep := range p.Entities {
		sum, seen := out[ep.Entity]
		if !seen {
			out[ep.Entity] = ep
			continue
		}
		sum.Calls += ep.Calls
		sum.VerifyCalls += ep.VerifyCalls
		if sum.Records < 0 || ep.Records < 0 {
			sum.Records = -1
		} else {
			sum.Records += ep.Records
		}
		out[ep.Entity] = sum
	}
	return out
}

// itoa writes a count, "?" for one the plan cannot give without reading (-1).
func itoa(n int) string {
	if n < 0 {
		return "?"
	}
	return strconv.Itoa(n)
}
