package bitrix_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/crashtest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
)

// The crash tests run the migration in a child process (testdata/crashchild) and kill it with
// SIGKILL at random moments, rerunning it each time, as cron would after a node died. The fakes
// and the databases live in the test and outlive the kills, aimed at the phases that write: 20
// for users, groups and chats, 16 for the feed and tasks. What a kill proves does not grow with
// the data: each phase is cut three or more times, on a portal just large enough that every
// phase spans many batches (make test stays under 5 minutes warm on 2 CPUs).

// world is one database and one target the child migrates into.
type world struct {
	dbURL  string
	target *targetfake.Server
	addr   string // TARGET_WEBHOOK_URL
	// env is more of the child's environment (BITRIX_DELETIONS).
	env []string
}

func newWorld(t *testing.T) *world {
	w := &world{dbURL: dbtest.URL(t), target: targetfake.New(targetfake.Options{})}
	srv := httptest.NewServer(w.target)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL + "/api/")
	u.User = url.UserPassword("import", w.target.Token())
	w.addr = u.String()
	return w
}

// startChild starts the crash child on the world's database and target, reading the portal,
// for the entities given (every one when none).
func startChild(t *testing.T, bin string, w *world, portal string, entities ...string) *crashtest.Child {
	t.Helper()
	return crashtest.Start(t, bin, append([]string{"BITRIX_CRASH_DB=" + w.dbURL, "BITRIX_CRASH_PORTAL=" + portal, "BITRIX_CRASH_TARGET=" + w.addr,
		"BITRIX_CRASH_ENTITIES=" + strings.Join(entities, ",")}, w.env...)...)
}

func TestKilledRunsConverge(t *testing.T) {
	crashTest(t, bitrixfake.Options{Users: 600, Groups: 40, Chats: 60, MessagesPerChat: 50, Seed: 51},
		[]string{bitrix.Users, bitrix.Groups, bitrix.Chats},
		[]aim{{"users get", 3}, {"users set", 4}, {"groups get", 3}, {"groups set", 4}, {"chats get", 3}, {"chats set", 3}},
		bitrix.ChatMessages)
}

// TestKilledMultiRangeGetConverges kills users get while many ID ranges are walked at once
// (7,500 users: three ranges of about 2,450 and the open one after the last ID, all in flight),
// so that kills land between ranges stored and ranges on their way; each rerun resumes every
// range where it stopped.
func TestKilledMultiRangeGetConverges(t *testing.T) {
	crashTest(t, bitrixfake.Options{Users: 7_500, Seed: 54}, []string{bitrix.Users},
		[]aim{{"users get", 6}, {"users set", 3}})
}

// TestKilledFeedAndTasksConverge kills the feed's and the tasks' get and set 8 times each, on
// a portal small enough that the many restarts stay quick, with every kind of child: recipients
// walked per audience, comments walked per author, checklists and old-card comments per page of
// tasks, task chats walked by the chats' messages walk, subtasks waiting for their parents.
func TestKilledFeedAndTasksConverge(t *testing.T) {
	crashTest(t, bitrixfake.Options{Users: 80, Groups: 8, Posts: 100, PostComments: 3, Tasks: 260, TaskComments: 4, Seed: 52},
		[]string{bitrix.Users, bitrix.Groups, bitrix.Feed, bitrix.Tasks},
		[]aim{{"feed get", 4}, {"feed set", 4}, {"tasks get", 4}, {"tasks set", 4}},
		bitrix.FeedComments, bitrix.TaskComments, bitrix.TaskChecklists)
}

// childPhases are the phases the crash child runs for every entity, in order.
var childPhases = []string{"fields-get", "fields-set", "get", "set", "verify"}

// aim is a phase to kill the child in, and how many times.
type aim struct {
	phase string
	kills int
}

// crashTest migrates the entities from a portal once without interruption, then again into a
// fresh database and target, killing the child the given number of times in each aimed phase,
// and requires both to end up equal; every entity in mustHave must have records on the target.
func crashTest(t *testing.T, opts bitrixfake.Options, entities []string, aims []aim, mustHave ...string) {
	crashTestWith(t, crashSetup{}, opts, entities, aims, mustHave...)
}

// crashSetup is what a crash test does besides migrating the portal as it is.
type crashSetup struct {
	// env is more of the child's environment, in both worlds (BITRIX_DELETIONS=propagate).
	env []string
	// change, when set, changes the portal after both worlds migrated it once without
	// interruption (records deleted); the runs compared, uninterrupted and killed, come after.
	change func(p *bitrixfake.Portal)
	// check, when set, checks the crashed world once it equals the uninterrupted one.
	check func(t *testing.T, w *world)
}

// crashTestWith is crashTest with a setup.
func crashTestWith(t *testing.T, setup crashSetup, opts bitrixfake.Options, entities []string, aims []aim, mustHave ...string) {
	if testing.Short() {
		t.Skip("kills child processes for a while")
	}
	dbtest.URL(t) // skips without a database, before anything starts
	t.Parallel()
	portal := bitrixfake.New(opts)
	psrv := httptest.NewServer(portal)
	defer psrv.Close()
	webhook := psrv.URL + portal.WebhookPath()

	bin := crashtest.Build(t, "./testdata/crashchild")

	ref, crashed := newWorld(t), newWorld(t)
	ref.env, crashed.env = setup.env, setup.env
	rng := rand.New(rand.NewPCG(opts.Seed, 1))
	if setup.change != nil {
		for _, w := range []*world{ref, crashed} {
			if last, _ := startChild(t, bin, w, webhook, entities...).Run(t, "", 0, rng); last != "done" {
				t.Fatalf("the first migration ended after %q", last)
			}
		}
		setup.change(portal)
	}

	// The uninterrupted run the crashed one must end up equal to.
	took := startChild(t, bin, ref, webhook, entities...).TimedPhases(t)

	// Each kill aims at a random moment early in one of the phases that write, so that the
	// work of a phase is cut several times before it is done; a phase whose work an earlier
	// run finished passes quickly, and the kill lands in a later one.
	// A kill counts once it lands in a phase that writes of the aimed entity: the window is a
	// small part of the phase's uninterrupted time, so that a set whose work earlier runs did is
	// still cut several times.
	var phases []string
	window := map[string]time.Duration{}
	for _, a := range aims {
		phases = append(phases, slices.Repeat([]string{a.phase}, a.kills)...)
		window[a.phase] = took[a.phase]/time.Duration(a.kills+2) + time.Millisecond
	}
	// order is where a phase comes in a child's run ("done" last), to tell a kill that landed
	// after the aimed entity's get and set: those ran to their end, so their work is done and
	// the kills still aimed at them could only land later.
	order := func(phase string) int {
		entity, step, _ := strings.Cut(phase, " ")
		i := slices.Index(entities, entity)
		if i < 0 {
			return len(entities) * len(childPhases)
		}
		return i*len(childPhases) + slices.Index(childPhases, step)
	}
	killedIn, spared := map[string]int{}, map[string]int{}
	for kills, attempts := 0, 0; kills < len(phases); attempts++ {
		if attempts > 3*len(phases) {
			t.Fatalf("after %d runs only %d of %d kills landed where aimed: %v", attempts, kills, len(phases), killedIn)
		}
		phase := phases[kills]
		last, killed := startChild(t, bin, crashed, webhook, entities...).Run(t, phase, window[phase], rng)
		if killed {
			killedIn[last]++
		}
		entity, _, _ := strings.Cut(phase, " ")
		switch {
		case killed && (last == entity+" get" || last == entity+" set"):
			kills++
		case !killed || order(last) > order(entity+" set"):
			for kills < len(phases) && phases[kills] == phase {
				kills++
				spared[phase]++
			}
		}
	}
	if len(spared) > 0 {
		t.Logf("kills not made because their phase had no work left: %v", spared)
	}
	if last, _ := startChild(t, bin, crashed, webhook, entities...).Run(t, "", 0, rng); last != "done" {
		t.Fatalf("final run ended after %q", last)
	}
	t.Logf("uninterrupted phases took %v; kills by phase: %v", took, killedIn)
	var gets, sets int
	for phase, n := range killedIn {
		switch {
		case strings.HasSuffix(phase, " get"):
			gets += n
		case strings.HasSuffix(phase, " set"):
			sets += n
		}
	}
	// A phase whose work ends before all its kills landed spares the rest, but most must land.
	if gets == 0 || sets == 0 || 4*(gets+sets) < 3*len(phases) {
		t.Errorf("kills landed in %d gets and %d sets of %d aimed; want both, and three in four at least", gets, sets, len(phases))
	}

	// The target holds every record exactly once, with the content of the uninterrupted run's.
	// Target ids may differ (memberships of groups imported by an earlier run are sent later),
	// so references are compared by the key of the record they name.
	if s := crashed.target.Stats(); s.Duplicates != 0 {
		t.Errorf("%d duplicates on the target", s.Duplicates)
	}
	want, got := ref.contents(t), crashed.contents(t)
	perEntity := map[string]int{}
	for key := range want {
		perEntity[strings.Split(key, ":")[1]]++
	}
	t.Logf("target records by entity: %v", perEntity)
	for _, m := range mustHave {
		if perEntity[m] == 0 {
			t.Errorf("the uninterrupted run imported no %s; the portal should have some", m)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d records on the target, want %d", len(got), len(want))
	}
	for key, w := range want {
		if got[key] != w {
			t.Errorf("target record %s = %s, want %s", key, got[key], w)
			break
		}
	}
	requireSameState(t, ref, crashed)
	if setup.check != nil {
		setup.check(t, crashed)
	}
}

// requireSameState requires the crashed world's database to hold the records, statuses, id map
// and inventory of the uninterrupted one, and its id map to name what its target holds.
func requireSameState(t *testing.T, ref, crashed *world) {
	t.Helper()
	for _, q := range []string{
		`SELECT entity, source_id, status, checksum, payload::text, dates::text, coalesce(last_error, '') FROM bitrix_records ORDER BY entity, source_id`,
		`SELECT entity, source_id, checksum FROM bitrix_id_map ORDER BY entity, source_id`,
		`SELECT entity, source_total::text, get_complete::text, verified::text FROM bitrix_inventory ORDER BY entity`,
	} {
		want, got := dumpRows(t, ref.dbURL, q), dumpRows(t, crashed.dbURL, q)
		if len(want) == 0 || len(got) != len(want) {
			t.Errorf("%s: %d rows, want %d", q, len(got), len(want))
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: row %d = %s, want %s", q, i, got[i], want[i])
				break
			}
		}
	}
	for _, row := range dumpRows(t, crashed.dbURL, `SELECT entity || ' ' || source_id || ' ' || target_id FROM bitrix_id_map`) {
		var entity, sourceID, targetID string
		fmt.Sscan(row, &entity, &sourceID, &targetID)
		if rec, ok := crashed.target.Lookup(entity, "source:"+entity+":"+sourceID); !ok || rec.TargetID != targetID {
			t.Errorf("id map %s %s -> %s, the target holds %+v", entity, sourceID, targetID, rec)
			break
		}
	}
}

// contents returns the target's records by key: checksum and payload, with the target ids in
// references replaced by the keys of the records they name.
func (w *world) contents(t *testing.T) map[string]string {
	t.Helper()
	keyOf := map[string]map[string]string{} // entity -> target id -> key
	for _, entity := range []string{bitrix.Users, bitrix.Groups, bitrix.Chats, bitrix.Feed, bitrix.Tasks} {
		keyOf[entity] = map[string]string{}
		for _, r := range w.target.Records(entity) {
			keyOf[entity][r.TargetID] = r.Key
		}
	}
	// Where each entity's payload names other records by target id ("a.b": field b of every
	// element of a).
	refs := map[string]map[string]string{
		bitrix.Users:          {},
		bitrix.Groups:         {"OWNER_ID": bitrix.Users},
		bitrix.GroupMembers:   {"USER_ID": bitrix.Users, "GROUP_ID": bitrix.Groups},
		bitrix.Chats:          {"owner_id": bitrix.Users, "participants": bitrix.Users, "entity_id": bitrix.Groups},
		bitrix.ChatMessages:   {"author_id": bitrix.Users, "chat_id": bitrix.Chats, "params.LIKE": bitrix.Users},
		bitrix.Feed:           {"AUTHOR_ID": bitrix.Users},
		bitrix.FeedRecipients: {"post_id": bitrix.Feed, "group_id": bitrix.Groups, "user_id": bitrix.Users},
		bitrix.FeedComments:   {"post_id": bitrix.Feed, "author_id": bitrix.Users},
		bitrix.Tasks: {"createdBy": bitrix.Users, "responsibleId": bitrix.Users, "groupId": bitrix.Groups,
			"parentId": bitrix.Tasks, "accomplices": bitrix.Users, "auditors": bitrix.Users, "changedBy": bitrix.Users,
			"statusChangedBy": bitrix.Users, "closedBy": bitrix.Users},
		bitrix.TaskChecklists: {"task_id": bitrix.Tasks, "items.created_by": bitrix.Users, "items.toggled_by": bitrix.Users,
			"items.members.user_id": bitrix.Users},
		bitrix.TaskComments: {"task_id": bitrix.Tasks, "author_id": bitrix.Users, "params.LIKE": bitrix.Users},
	}
	texts := []string{"text", "TITLE", "DETAIL_TEXT", "title", "description"}
	mention := regexp.MustCompile(`\[USER=(\d+)`)
	out := map[string]string{}
	for entity := range refs {
		for _, r := range w.target.Records(entity) {
			var payload map[string]any
			if err := json.Unmarshal(r.Payload, &payload); err != nil {
				t.Fatal(err)
			}
			for path, to := range refs[entity] {
				replaceRefs(payload, strings.Split(path, "."), keyOf[to], to == bitrix.Groups)
			}
			for _, f := range texts {
				if text, ok := payload[f].(string); ok {
					payload[f] = mention.ReplaceAllStringFunc(text, func(m string) string {
						return "[USER=" + keyOf[bitrix.Users][m[len("[USER="):]]
					})
				}
			}
			// The checksum covers the payload with its target ids, which differ between runs
			// (set sends batches concurrently): the payload compared by keys says it all.
			b, _ := json.Marshal(payload)
			out[r.Key] = string(b)
		}
	}
	return out
}

// replaceRefs replaces the target ids found along path in v by the keys of the records they name.
// A chat's entity_id holds a group's id only for a workgroup chat: loose leaves other values.
func replaceRefs(v any, path []string, keys map[string]string, loose bool) {
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			replaceRefs(e, path, keys, loose)
		}
	case map[string]any:
		if len(path) > 1 {
			replaceRefs(t[path[0]], path[1:], keys, loose)
			return
		}
		switch leaf := t[path[0]].(type) {
		case string:
			if k, ok := keys[leaf]; ok || !loose {
				t[path[0]] = k
			}
		case []any:
			for i, id := range leaf {
				leaf[i] = keys[fmt.Sprint(id)]
			}
		}
	}
}

// dumpRows returns a query's rows as text.
func dumpRows(t *testing.T, dbURL, q string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals...))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
