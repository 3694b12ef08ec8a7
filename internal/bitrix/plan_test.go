package bitrix_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// The chats' plan, made once users and groups are read (workgroups have chats of their own),
// reads the recent list: it foretells the chats and messages get reads. (The plan's mechanism,
// its counts and calls for every kind of lister, is tested in internal/bitrix/engine.)
func TestChatsPlanForetellsGet(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 300, Groups: 120, Seed: 9, Chats: 30, MessagesPerChat: 120})
	e := v.engine()
	for _, ent := range []string{bitrix.Users, bitrix.Groups} {
		if _, err := e.Get(v.ctx, ent); err != nil {
			t.Fatal(err)
		}
	}
	p, err := e.Plan(v.ctx, rest.DefaultRate())
	if err != nil {
		t.Fatal(err)
	}
	plans := map[string]engine.EntityPlan{}
	for _, ep := range p.Entities {
		plans[ep.Entity] = ep
	}
	st, err := e.Get(v.ctx, bitrix.Chats)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.Of(bitrix.Chats); plans[bitrix.Chats].Records != int64(c.Rows) || c.Rows == 0 {
		t.Errorf("plan: %d chats, get read %d", plans[bitrix.Chats].Records, c.Rows)
	}
	if m := st.Of(bitrix.ChatMessages); plans[bitrix.ChatMessages].Records != int64(m.Rows) || m.Rows == 0 {
		t.Errorf("plan: %d messages, get read %d", plans[bitrix.ChatMessages].Records, m.Rows)
	}
}

// The feed's and the tasks' plans, made once users and groups are read, foretell what their gets
// send: the feed's walks one call per 50 audiences and authors (more for a key past one page),
// the tasks one comment command per task whichever card it is in.
func TestPlanForetellsFeedAndTasks(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 300, Groups: 20, Posts: 150, PostComments: 3, Tasks: 600, TaskComments: 4, Seed: 12})
	e := v.engine()
	// Before anything is read, the feed's walks are planned from the portal's counts of users and
	// workgroups: as many calls as once they are read.
	first, err := e.Plan(v.ctx, rest.DefaultRate())
	if err != nil {
		t.Fatal(err)
	}
	feedCalls := func(p engine.Plan) int {
		n := 0
		for _, ep := range p.Entities {
			if ep.Entity == bitrix.FeedRecipients || ep.Entity == bitrix.FeedComments {
				n += ep.Calls
			}
		}
		return n
	}
	for _, ent := range []string{bitrix.Users, bitrix.Groups} {
		if _, err := e.Get(v.ctx, ent); err != nil {
			t.Fatal(err)
		}
	}
	p, err := e.Plan(v.ctx, rest.DefaultRate())
	if err != nil {
		t.Fatal(err)
	}
	// One audience per user and workgroup and all employees, one author per user; 50 to a call.
	walks := (300+20+1+49)/50 + (300+49)/50
	if before, after := feedCalls(first), feedCalls(p); before != walks || after != walks {
		t.Errorf("the feed's walks are planned at %d calls before users and groups are read, %d after; want %d", before, after, walks)
	}
	planned := map[string]int{}
	for _, ep := range p.Entities {
		planned[ep.Entity] += ep.Calls
	}
	for _, ent := range []string{bitrix.Feed, bitrix.Tasks} {
		want := 0
		for _, member := range bitrix.Catalog().Family(mustEntity(t, ent)) {
			want += planned[member.Name]
		}
		before := v.portal.Stats().Requests
		st, err := e.Get(v.ctx, ent)
		if err != nil {
			t.Fatal(err)
		}
		// A key with more than a page (the posts of all employees, an author of many comments, a
		// long chat) costs more than planned: at most one call per 50 rows its children read.
		extra := 0
		for _, child := range bitrix.Catalog().Children(mustEntity(t, ent)) {
			extra += (st.Of(child.Name).Rows + 49) / 50
		}
		got := v.portal.Stats().Requests - before
		if got < want || got > want+extra {
			t.Errorf("%s get made %d calls, the plan said %d (and up to %d more for keys past one page)", ent, got, want, extra)
		}
		t.Logf("%s: planned %d calls, sent %d", ent, want, got)
	}
}

func mustEntity(t *testing.T, name string) *engine.Entity {
	t.Helper()
	ent, ok := bitrix.Catalog().Entity(name)
	if !ok {
		t.Fatalf("no entity %q in the catalog", name)
	}
	return ent
}
