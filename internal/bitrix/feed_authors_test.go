package bitrix_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/retry"
)

// Other authors' feed comments come with their text empty to an administrator's webhook:
// `bitrix status` ranks the authors holding most of them, and with those authors' own webhooks
// the next get reads their comments with the text, and set imports them; the tokens appear
// nowhere.
func TestAuthorWebhooksRecoverWithheldComments(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 20, Groups: 3, Posts: 40, PostComments: 4, Seed: 44})
	e := v.engine()
	v.migrateBase(e)
	_ = e.Run(v.ctx, bitrix.Feed) // withheld comments are listed, not a failure
	withheld := func(author string) int {
		return v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'feed_comments' AND payload->>'author_id' = $1
AND strpos(payload->>'_unreachable', 'text withheld') > 0`, author)
	}
	rep, err := e.Report(v.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var advice []string
	for _, es := range rep.Entities {
		if es.Entity == bitrix.FeedComments {
			advice = es.Advice
		}
	}
	if len(advice) != 1 || !strings.Contains(advice[0], "authors hold 8") && !strings.Contains(advice[0], "authors hold 9") {
		t.Fatalf("status advice %q", advice)
	}
	// The first author named holds the most.
	first := strings.TrimPrefix(strings.Fields(advice[0][strings.Index(advice[0], "user "):])[1], "")
	top := withheld(first)
	if top == 0 {
		t.Fatalf("user %s named first holds no withheld comment: %s", first, advice[0])
	}
	var out bytes.Buffer
	if err := rep.WriteText(&out); err != nil || !strings.Contains(out.String(), "advice") {
		t.Errorf("status text lacks the advice: %v\n%s", err, out.String())
	}

	// The top author's own webhook (an ordinary user's) recovers their comments.
	id, _ := strconv.Atoi(first)
	token := "author0own0token0" + first
	src, err := rest.New(v.sourceURL(v.portal.AddWebhook(id, token, false)), rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1),
		Retry: retry.Policy{Delays: []time.Duration{0, 0, 0}}, Logger: v.logger()})
	if err != nil {
		t.Fatal(err)
	}
	e = v.engine(func(c *engine.Config) {
		c.Delegates = map[string]engine.Source{first: src}
	})
	plan, err := e.Plan(v.ctx, rest.DefaultRate())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plan.Entities {
		if p.Entity == bitrix.FeedComments && !strings.Contains(p.How, "1 keys through their owners' own webhooks") {
			t.Errorf("plan of feed comments: %+v", p)
		}
	}
	if err := e.Run(v.ctx, bitrix.Feed); err != nil && withheld(first) > 0 {
		t.Fatalf("feed run with the author's webhook: %v", err)
	}
	if n := withheld(first); n != 0 {
		t.Errorf("%d of user %s's comments still withheld", n, first)
	}
	imported := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'feed_comments' AND payload->>'author_id' = $1
AND status = 'IMPORT_OK' AND coalesce(payload->>'text', '') <> ''`, first)
	if imported < top {
		t.Errorf("user %s: %d comments imported with their text, want %d", first, imported, top)
	}
	for _, r := range v.target.Records(bitrix.FeedComments) {
		if strings.Contains(string(r.Payload), token) {
			t.Errorf("%s carries the author's token", r.Key)
		}
	}
	if strings.Contains(v.log.String(), token) || v.count(`SELECT count(*) FROM bitrix_records WHERE payload::text LIKE '%'||$1||'%'`, token) > 0 {
		t.Error("the author's token appears in the log or the database")
	}
	// A second get sends nothing again.
	before := v.target.Stats()
	if err := e.Run(v.ctx, bitrix.Feed); err != nil && withheld(first) > 0 {
		t.Fatal(err)
	}
	if after := v.target.Stats(); after.Duplicates != 0 || after.Items != before.Items || withheld(first) != 0 {
		t.Errorf("rerun: target stats %+v, before %+v; withheld %d", after, before, withheld(first))
	}
}
