// Package bitrixfake is a fake Bitrix24 portal served over real HTTP, for
// tests and the demo. It answers the REST methods the migration uses with
// deterministic generated data of any size, and misbehaves the way the
// real portal does:
//
//   - 50-row pages with next/total, start=-1 (no count, no next), filters
//     with operator prefixes (>ID, @ID, %NAME...), sort orders, and the
//     real defaults (sonet_group.get sorts by ID descending and hides
//     invisible groups unless IS_ADMIN=Y; sonet_group.user.get leaves
//     dismissed users out while NUMBER_OF_MEMBERS counts them);
//   - batch with its envelope, halt, the 50-command limit, empty sections
//     as [], and $result[...] references resolved as the portal's PHP does,
//     including its failure mode: a path that does not resolve substitutes
//     whatever part of it did, or leaves the text in place;
//   - the leaky bucket (503 QUERY_LIMIT_EXCEEDED), the per-method
//     operating-time window (429 OPERATION_TIME_LIMIT), 401 NO_AUTH_FOUND
//     for a wrong webhook, 404 ERROR_METHOD_NOT_FOUND, insufficient_scope,
//     all with the real bodies;
//   - faults on demand: a 502 HTML page, a slow answer, a dropped
//     connection;
//   - chats (im.*, see im.go): the webhook user's recent list with pages
//     that overlap, message history behind LAST_ID/FIRST_ID cursors capped
//     at 50, participants, chat lookup by entity, and 403 ACCESS_ERROR for
//     the chats that user is not in;
//   - the CRM (crm.*, userfieldconfig.list, see crm.go): companies, contacts,
//     deals and smart processes through crm.item.list, funnels and stages,
//     custom fields, product rows, with the documented refusals;
//   - workflows (bizproc.*, see bizproc.go): templates, running workflows
//     and tasks.
//   - tasks (tasks.go): camelCase rows with string ids, group as [] or an object, tags keyed by
//     id, hidden tasks whose subtasks name them as parent, parents with higher ids than their
//     children, checklists, comments in task chats or in the deprecated old card (positional
//     parameters), refusals;
//   - the live feed (feed.go): posts by last activity, audiences only as a filter
//     (LOG_RIGHTS), comments listed per author with other authors' text withheld;
//   - contacts linked to several companies, which only crm.contact.company.items.get lists
//     (crm.item.list gives the primary one as companyId);
//   - deletions (delete.go): Portal.Delete and the REST delete methods, after which lists, gets
//     and children behave as on the real portal;
//   - other users' incoming webhooks (webhooks.go), each acting as its user in the live feed;
//   - changes between two runs (mutate.go, churn.go, products.go): Edit, Add, task and timeline
//     comments and product rows added and deleted, and Churn(seed, fraction), issue 35's mix with
//     its exact report; each moves the modification and activity fields the docs name
//     (updatedTime, lastActivityTime, DATE_MODIFY, changedDate, activityDate, commentsCount),
//     dated after the last answer and never in the portal's future, and filters compare those
//     dates as instants in any documented format (datefilter.go); the classic crm.*.list too
//     (crm_classic.go);
//   - on demand, the answer shapes recorded from real portals (Options.Shapes, shapes.go):
//     result_error as an unkeyed list, batches keyed by position, totals that are the page's
//     size, the time block's generations, codes as "", "100" or 100, a plain-text 503; and
//     commands failing inside a batch (FailCommands).
//
// Processing time is virtual: methods cost what Options says and the
// portal's clock is injectable, so the operating-time limit can be
// reached without waiting for it.
package bitrixfake

import (
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	embedded "github.com/ingest-dev/ingest/internal/fakes/fixtures"
	"github.com/ingest-dev/ingest/internal/fakes/gzipbomb"
)

const (
	pageSize = 50
	maxBatch = 50
)

var userFieldsSample = embedded.ReadFile("bitrix/user.fields.json")

var userUserfieldListSample = embedded.ReadFile("bitrix/user.userfield.list.json")

// Options configure a Portal. The zero value is a small portal with no
// limits.
type Options struct {
	// Users and Groups are how many of each the portal holds.
	Users, Groups int
	// Departments is how many departments the company structure has (department.get,
	// departments.go); each user's UF_DEPARTMENT then names some of them. None: department.get
	// answers no rows, and UF_DEPARTMENT names departments 1 to 40 as it always did.
	Departments int
	// Chats is how many chats the webhook's user takes part in, besides the
	// workgroup chats (one per group, whose participants are the group's
	// members): 1:1 dialogs, group chats, open chats and task chats, mixed
	// as on a real portal. OpenLines adds that many Open Channel
	// conversations, each with an external guest that user.get does not
	// list. MessagesPerChat is how many messages every chat holds; 0 means 20.
	Chats, OpenLines, MessagesPerChat int
	// Seed selects the generated data; the same seed gives the same portal.
	Seed uint64
	// UserID and Token form the webhook path /rest/<UserID>/<Token>/;
	// defaults "1" and "fake0webhook0token".
	UserID, Token string
	// Scopes the webhook has, like "user", "sonet", "user.userfield"; nil
	// means all of them.
	Scopes []string
	// Location is the portal's time zone, in which dates are rendered;
	// nil means UTC+03:00 (Moscow).
	Location *time.Location
	// Rate and Burst are the leaky bucket: Rate requests drain per second,
	// Burst fit. Zero Rate means no limit. The cloud: 2/50, Enterprise 5/250.
	Rate  float64
	Burst int
	// OperatingLimit is the running time a method may accumulate over 10
	// minutes before it is blocked; zero means no limit (the cloud: 480 s).
	OperatingLimit time.Duration
	// CallCost, RowCost and CountCost make up a call's virtual running
	// time: a fixed part, a part per row returned and a part per row the
	// count query looks at (start >= 0). Measured on a cloud portal with
	// 100k contacts, all fields: about 50 ms, 8 ms and 8 µs.
	CallCost, RowCost, CountCost time.Duration
	// SlowDelay is how long FaultSlow holds an answer; 0 means 2 s.
	SlowDelay time.Duration
	// Latency and CommandLatency hold every answer back in real time, the
	// first per HTTP request and the second per method run (so a batch of
	// 50 commands takes Latency + 50*CommandLatency), without blocking
	// other requests: the network and the portal's own work, which is what
	// concurrent clients overlap. Zero means answers come at once.
	Latency, CommandLatency time.Duration
	// MethodLatency replaces CommandLatency for the methods it names (in
	// lower case): a portal is slower on some methods than on others.
	MethodLatency map[string]time.Duration
	// Now is the portal's clock; nil means time.Now.
	Now func() time.Time
	// Observe, when set, is called with every method the portal runs (each command of a batch on
	// its own, not the batch), before it runs, with the parameters as the client sent them: for tests that act at
	// a given request, such as killing the client while it waits for the answer. It is called with
	// the portal's lock held, so it must not call the Portal, and it holds every request back for
	// as long as it runs.
	Observe func(method string, params map[string]any)

	// Companies, Contacts and Deals are how many of each the portal's CRM holds, and
	// SmartItems how many items each of its two smart processes holds (none: no smart
	// processes at all). See crm.go.
	Companies, Contacts, Deals, SmartItems int
	// Workflows is how many workflow templates the portal holds; the CRM ones have running
	// workflows and tasks (bizproc.go).
	Workflows int
	// Extranet makes the webhook's user an extranet user: every CRM method answers 403
	// allowed_only_intranet_user. DenyCRM and DenyBizproc refuse the CRM or workflow methods
	// with their documented access errors.
	Extranet, DenyCRM, DenyBizproc bool
	// Tasks is how many tasks the portal holds (tasks.go); TaskChatPercent the share of them in
	// the new card, with a chat (0 means 50, negative none); TaskComments their average number
	// of comments (0 means 4). TaskListWithoutChat makes tasks.task.list leave chatId out
	// even when selected, so that only tasks.task.get tells it.
	Tasks, TaskChatPercent, TaskComments int
	TaskListWithoutChat                  bool
	// Posts is how many live feed posts the portal holds (feed.go), PostComments their average
	// number of comments (0 means 3).
	Posts, PostComments int
	// RealShapes makes the portal answer users, contacts and tasks in the shapes recorded from
	// real portals instead of the documentation's tidy ones, values unchanged (shapes.go).
	RealShapes bool
	// NotAdmin makes the webhook's user an ordinary user: user.admin answers false and
	// log.blogcomment.user.get ignores USER_ID.
	NotAdmin bool
	// Shapes makes the portal answer in shapes real portals send besides the documented ones
	// (shapes.go).
	Shapes Shapes
	// QuietTimeline makes a timeline comment added through AddTimelineComment leave its record's
	// lastActivityTime alone: the documentation describes the field as the time of the last
	// activity in the timeline, and a portal may not count a comment as one (mutate.go).
	QuietTimeline bool
	// TaskFilterAsListed makes tasks.task.list ignore filter keys its page does not list among
	// the filter's fields, ACTIVITY_DATE among them (listed for order only): a portal that reads
	// the page strictly (tasks_methods.go).
	TaskFilterAsListed bool
}

// Stats counts what the portal saw.
type Stats struct {
	// Requests is the number of HTTP requests.
	Requests int
	// QueryLimit is the number of 503 QUERY_LIMIT_EXCEEDED answers.
	QueryLimit int
	// OperationLimit is the number of 429 OPERATION_TIME_LIMIT refusals,
	// including those of single batch commands.
	OperationLimit int
	// Faults is the number of injected faults served.
	Faults int
	// Calls counts executed methods by name, batch commands included.
	Calls map[string]int
}

// Request describes the last HTTP request the portal received.
type Request struct {
	// Verb is the HTTP method, POST or GET.
	Verb string
	// Method is the REST method.
	Method string
	// Params are the decoded parameters.
	Params map[string]any
}

// Portal is a fake Bitrix24 portal; it is an http.Handler.
type Portal struct {
	opts     Options
	allUsers []int // every generated user ID; memberships draw from it
	handlers map[string]handler
	scopes   map[string]bool
	// userFilterKeys are the user fields user.get accepts as top-level
	// filter keys, as in user.get?ID=5.
	userFilterKeys map[string]bool
	userFields     any
	userUserfields []json.RawMessage

	mu             sync.Mutex
	users, groups  []int // live IDs, ascending
	userOverrides  map[int]map[string]any
	groupOverrides map[int]map[string]any
	removed        map[[2]int]bool // group, user
	bucket         leakyBucket
	windows        map[string]*operatingWindow
	faults         map[string][]Fault
	emptyPages     map[string][]int    // method: the >ID of listings to answer empty (faults_empty.go)
	ignoredKeys    map[string][]string // method: filter keys it leaves out (faults_filter.go)
	commandFaults  map[string][]string // method: codes its next batch commands fail with (shapes.go)
	im             imState
	tasks          taskState
	feed           feedState
	stats          Stats
	held           time.Duration // answer time of the methods run so far (CommandLatency, MethodLatency)
	last           Request
	webhooks       map[string]webhook // other users' incoming webhooks, by user id (webhooks.go)
	callerID       int                // the user whose webhook made the request being answered

	// The CRM (crm.go): live ids, the deleted company a deal still names, custom fields. The
	// gen* lists are the ids as generated: rows draw their links from them, so that deleting a
	// record (delete.go) changes no other record's row.
	companies, contacts, deals, smartItems []int
	genCompanies, genContacts, genDeals    []int
	deletedCompany                         int
	crmUserfields                          [][]json.RawMessage
	templates                              []int // workflow template ids (bizproc.go)
	departments                            departmentState

	bombs map[string]*gzipbomb.Bomb // method: the gzip bomb its requests get (faults_bomb.go)

	// The portal's time (mutate.go): born is its clock when it was made, which no generated date
	// passes; shift moves its clock forward when a change has to be dated after the last answer
	// served (lastServed) and the clock has not moved since; mut holds what changed.
	born, lastServed time.Time
	shift            time.Duration
	mut              mutations
}

// handler runs a method with its decoded parameters; it is called with the
// portal's lock held.
type handler func(params map[string]any) answer

// answer is what a method produced: a result or an error.
type answer struct {
	result      any
	total, next *int
	cost        time.Duration // virtual running time

	status      int // non-zero for errors
	code        string
	description string

	method    string // set by execute, for the timing block
	operating float64
	resetAt   time.Time
}

func (a answer) failed() bool { return a.status != 0 }

func fail(status int, code, description string) answer {
	return answer{status: status, code: code, description: description}
}

// New returns a portal with generated data.
func New(opts Options) *Portal {
	if opts.UserID == "" {
		opts.UserID = "1"
	}
	if opts.Token == "" {
		opts.Token = "fake0webhook0token"
	}
	if opts.Location == nil {
		opts.Location = time.FixedZone("MSK", 3*60*60)
	}
	if opts.SlowDelay <= 0 {
		opts.SlowDelay = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &Portal{
		opts:           opts,
		allUsers:       generateIDs(opts.Users, 10),
		groups:         generateIDs(opts.Groups, 6),
		userOverrides:  map[int]map[string]any{},
		groupOverrides: map[int]map[string]any{},
		removed:        map[[2]int]bool{},
		bucket:         leakyBucket{rate: opts.Rate, burst: float64(opts.Burst)},
		windows:        map[string]*operatingWindow{},
		faults:         map[string][]Fault{},
		emptyPages:     map[string][]int{},
		ignoredKeys:    map[string][]string{},
		commandFaults:  map[string][]string{},
		stats:          Stats{Calls: map[string]int{}},
	}
	p.users = slices.Clone(p.allUsers)
	p.born = opts.Now().Truncate(time.Second)
	p.mut = newMutations()
	if opts.Scopes != nil {
		p.scopes = map[string]bool{}
		for _, s := range opts.Scopes {
			p.scopes[s] = true
		}
	}
	var fields struct{ Result any }
	if err := json.Unmarshal(userFieldsSample, &fields); err != nil {
		panic(fmt.Sprintf("bitrixfake: embedded user.fields sample: %v", err))
	}
	p.userFields = fields.Result
	var userfields struct{ Result []json.RawMessage }
	if err := json.Unmarshal(userUserfieldListSample, &userfields); err != nil {
		panic(fmt.Sprintf("bitrixfake: embedded user.userfield.list sample: %v", err))
	}
	p.userUserfields = userfields.Result
	p.userFilterKeys = map[string]bool{}
	for _, f := range p.userRow(1) {
		p.userFilterKeys[f.key] = true
	}
	p.handlers = map[string]handler{
		"user.get":             p.userGet,
		"user.current":         p.userCurrent,
		"user.fields":          p.userFieldsList,
		"user.userfield.list":  p.userfieldList,
		"sonet_group.get":      p.groupGet,
		"sonet_group.user.get": p.groupUserGet,
		"department.get":       p.departmentGet,
	}
	p.initDepartments()
	p.initIM()
	p.initCRM()
	p.initCRMMethods()
	p.initCRMClassic()
	p.initBizproc()
	p.initTasks()
	p.initFeed()
	p.initDeleteMethods()
	return p
}

// scopeOf names the scope a method belongs to, per the docs.
func scopeOf(method string) string {
	switch {
	case strings.HasPrefix(method, "user.userfield."):
		return "user.userfield"
	case strings.HasPrefix(method, "user."):
		return "user"
	case strings.HasPrefix(method, "sonet_group."):
		return "sonet"
	case strings.HasPrefix(method, "im."):
		return "im"
	case strings.HasPrefix(method, "crm."):
		return "crm"
	case strings.HasPrefix(method, "userfieldconfig."):
		return "userfieldconfig"
	case strings.HasPrefix(method, "bizproc."):
		return "bizproc"
	case strings.HasPrefix(method, "tasks.") || strings.HasPrefix(method, "task."):
		return "task"
	case strings.HasPrefix(method, "log."):
		return "log"
	case strings.HasPrefix(method, "department."):
		return "department"
	}
	return ""
}

// WebhookPath returns the path of the portal's webhook, "/rest/1/<token>/";
// append it to the server's URL to get the webhook URL.
func (p *Portal) WebhookPath() string {
	return "/rest/" + p.opts.UserID + "/" + p.opts.Token + "/"
}

// Token returns the webhook token, so tests can check it never leaks.
func (p *Portal) Token() string { return p.opts.Token }

// ServeHTTP answers a REST call.
func (p *Portal) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	userID, token, method, ok := splitPath(r.URL.Path)
	body, err := readAllLimited(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.stats.Requests++
	fault := p.takeFault(method)
	bomb := p.bombFor(method)
	p.mu.Unlock()
	if bomb != nil {
		bomb.Serve(w)
		return
	}
	if fault != 0 && !p.serveFault(w, r, fault) {
		return
	}

	p.mu.Lock()
	heldBefore := p.held
	now := p.now()
	if now.After(p.lastServed) {
		p.lastServed = now
	}
	params := requestParams(r, body)
	p.last = Request{Verb: r.Method, Method: method, Params: params}
	var a answer
	switch {
	case fault == FaultQueryLimit || !p.bucket.admit(now): // a refusal adds nothing to the bucket
		p.stats.QueryLimit++
		a = fail(http.StatusServiceUnavailable, "QUERY_LIMIT_EXCEEDED", "Too many requests")
	case !ok || !p.authorized(userID, token):
		a = fail(http.StatusUnauthorized, "NO_AUTH_FOUND", "Wrong authorization data")
	case method == "batch":
		a = p.batch(params, batchOrder(r, body), now)
	default:
		a = p.execute(method, params, now)
	}
	out, status := p.envelope(a, now)
	held := p.held - heldBefore
	p.callerID = 0
	p.mu.Unlock()
	if !p.hold(r, p.opts.Latency+held) {
		return
	}
	if a.code == "QUERY_LIMIT_EXCEEDED" && p.opts.Shapes.PlainQueryLimit {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(plainQueryLimit))
		return
	}

	body, err = appendJSON(nil, out)
	if err != nil {
		http.Error(w, "encode answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// hold waits d, the latency of an answer, outside the portal's lock; it
// reports false if the client went away meanwhile.
func (p *Portal) hold(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// splitPath reads /rest/<user>/<token>/<method>[.json].
func splitPath(path string) (userID, token, method string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) != 4 || parts[0] != "rest" {
		return "", "", "", false
	}
	method = strings.ToLower(strings.TrimSuffix(parts[3], ".json"))
	return parts[1], parts[2], method, true
}

// requestParams merges the query string and the body, as the portal's
// getRequestData does: a JSON body when the content type says so, a form
// otherwise.
func requestParams(r *http.Request, body []byte) map[string]any {
	params := parseStr(r.URL.RawQuery)
	if len(body) == 0 {
		return params
	}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType == "application/json" {
		maps.Copy(params, decodeJSONParams(body))
	} else {
		maps.Copy(params, parseStr(string(body)))
	}
	return params
}

// batchOrder returns the command keys in request order.
func batchOrder(r *http.Request, body []byte) []string {
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType == "application/json" {
		if keys := jsonObjectKeys(body, "cmd"); keys != nil {
			return keys
		}
	}
	if keys := formKeys(string(body), "cmd"); keys != nil {
		return keys
	}
	return formKeys(r.URL.RawQuery, "cmd")
}

// execute runs one method, top-level or inside a batch: scope check,
// operating-time check, the handler, and the time it costs.
func (p *Portal) execute(method string, params map[string]any, now time.Time) answer {
	h, ok := p.handlers[method]
	if !ok {
		return fail(http.StatusNotFound, "ERROR_METHOD_NOT_FOUND", "Method not found!")
	}
	if p.scopes != nil && !p.scopes[scopeOf(method)] {
		return fail(http.StatusForbidden, "insufficient_scope",
			"The request requires higher privileges than provided by the webhook token")
	}
	window := p.windows[method]
	if window == nil {
		window = &operatingWindow{}
		p.windows[method] = window
	}
	if p.opts.OperatingLimit > 0 && window.sum(now) >= p.opts.OperatingLimit.Seconds() {
		p.stats.OperationLimit++
		return fail(http.StatusTooManyRequests, "OPERATION_TIME_LIMIT", "Method is blocked due to operation time limit.")
	}
	if p.opts.Observe != nil {
		p.opts.Observe(method, params)
	}
	a := h(p.unfiltered(method, p.emptied(method, params)))
	p.stats.Calls[method]++
	if d, ok := p.opts.MethodLatency[method]; ok {
		p.held += d
	} else {
		p.held += p.opts.CommandLatency
	}
	window.add(now, a.cost.Seconds())
	a.method = method
	a.operating = window.sum(now)
	a.resetAt = window.resetAt(now)
	return a
}

// envelope renders an answer as the portal's JSON and HTTP status.
func (p *Portal) envelope(a answer, now time.Time) (any, int) {
	if a.failed() {
		return object{{"error", p.errorCodeValue(a.code)}, {"error_description", a.description}}, a.status
	}
	out := object{{"result", a.result}}
	if a.next != nil {
		out.set("next", *a.next)
	}
	if total := p.shapedTotal(a); total != nil {
		out.set("total", *total)
	}
	out.set("time", p.timing(a, now))
	return out, http.StatusOK
}

// timing renders the time block of an answer (DOCS data-types.md#time).
func (p *Portal) timing(a answer, now time.Time) object {
	start := float64(now.UnixNano()) / 1e9
	processing := a.cost.Seconds()
	t := object{
		{"start", start},
		{"finish", start + processing},
		{"duration", processing},
		{"processing", processing},
		{"date_start", p.isoDate(now)},
		{"date_finish", p.isoDate(now.Add(a.cost))},
		{"operating", a.operating},
	}
	if !a.resetAt.IsZero() {
		t.set("operating_reset_at", a.resetAt.Unix())
	}
	return p.shapeTime(t, now)
}

// Fault is a failure the portal can be told to serve instead of an answer.
type Fault int

const (
	// FaultServerError answers 502 with the HTML page of the front proxy.
	FaultServerError Fault = iota + 1
	// FaultSlow holds the answer for Options.SlowDelay, past a client's
	// timeout.
	FaultSlow
	// FaultDrop closes the connection without answering.
	FaultDrop
	// FaultQueryLimit refuses the request with 503 QUERY_LIMIT_EXCEEDED, as
	// the portal does when its bucket is full though ours is not: another
	// client on the same address, or a previous run, filled it.
	FaultQueryLimit
)

// FailNext makes the next n requests for the REST method ("batch" for
// batches, "" for any) fail with f.
func (p *Portal) FailNext(method string, f Fault, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	method = strings.ToLower(method)
	for range n {
		p.faults[method] = append(p.faults[method], f)
	}
}

func (p *Portal) takeFault(method string) Fault {
	for _, key := range []string{method, ""} {
		if q := p.faults[key]; len(q) > 0 {
			p.faults[key] = q[1:]
			p.stats.Faults++
			return q[0]
		}
	}
	return 0
}

// serveFault serves f and reports whether the request should still be
// answered normally afterwards.
func (p *Portal) serveFault(w http.ResponseWriter, r *http.Request, f Fault) bool {
	switch f {
	case FaultServerError:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, badGatewayPage)
		return false
	case FaultSlow:
		t := time.NewTimer(p.opts.SlowDelay)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-r.Context().Done():
			return false
		}
	case FaultDrop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				closeHard(conn)
				return false
			}
		}
		panic(http.ErrAbortHandler) // not hijackable (HTTP/2): abort the stream
	}
	return true
}

func closeHard(conn net.Conn) {
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0) // RST instead of FIN: "connection reset by peer"
	}
	_ = conn.Close()
}

const badGatewayPage = `<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx</center>
</body>
</html>
`

// MovedTo returns a handler for a portal's old address after a rename: it
// answers every request with 302 and the same path on newBase, as the
// cloud does (DOCS settings/how-to-call-rest-api/change-domen.md).
func MovedTo(newBase string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.TrimSuffix(newBase, "/")+r.URL.RequestURI(), http.StatusFound)
	})
}

// Stats returns what the portal has seen so far.
func (p *Portal) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Calls = maps.Clone(p.stats.Calls)
	return s
}

// LastRequest returns the last request the portal received.
func (p *Portal) LastRequest() Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}
