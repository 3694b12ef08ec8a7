// Package enrichfake is a fake asynchronous enrichment provider implementing
// docs/enrichment-api.md on its own types (it shares no code with the client it fakes,
// internal/social/enrichapi), modelled on AWS Rekognition Video and Google Vision's async batch:
// a submitted job is queued, then runs for a while, then succeeds or fails; the same
// idempotency token with the same refs returns the same job, with other refs 409; a cap on
// unfinished jobs answers 429; results expire some time after the job finished (410); a bearer
// token other than its own answers 401 to everything. On demand a results page after the first
// answers 503 once (a provider's transient failure mid-read). Labels are derived from the inputs,
// so the same input always gets the same labels.
package enrichfake

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The contract's types (docs/enrichment-api.md), as the fake reads and writes them.
type (
	// item is one input of a job: media by URL, or a text.
	item struct {
		Ref       string `json:"ref"`
		MediaURL  string `json:"media_url,omitempty"`
		MediaType string `json:"media_type,omitempty"`
		Text      string `json:"text,omitempty"`
	}
	// submission is the body of POST /jobs.
	submission struct {
		IdempotencyToken string `json:"idempotency_token"`
		Kind             string `json:"kind"`
		Items            []item `json:"items"`
	}
	// label is one label of a result.
	label struct {
		Name       string  `json:"name"`
		Confidence float64 `json:"confidence"`
	}
	// result is the outcome for one item.
	result struct {
		Ref    string  `json:"ref"`
		Labels []label `json:"labels"`
	}
	// resultsPage is one page of GET /jobs/{id}/results.
	resultsPage struct {
		Results       []result `json:"results"`
		NextPageToken string   `json:"next_page_token,omitempty"`
	}
)

// Job statuses of the contract.
const (
	queued    = "queued"
	running   = "running"
	succeeded = "succeeded"
	failed    = "failed"
)

// Options configure the fake.
type Options struct {
	// Token is the bearer token it accepts.
	Token string
	// Cap is how many unfinished jobs it holds at once (default 20, Rekognition's default).
	Cap int
	// RunFor is how long a job takes from submission to its end (default 2 s).
	RunFor time.Duration
	// Expiry is how long results are kept after a job ends (default 7 days).
	Expiry time.Duration
	// FailEvery, when positive, fails every Nth job.
	FailEvery int
	// PageSize is the number of results per page (default 50).
	PageSize int
	// FlakyResults: every results page after the first answers 503 the first time it is asked.
	FlakyResults bool
	// HideJobOnMismatch leaves job_id out of a 409 idempotency_mismatch (the contract makes it
	// optional).
	HideJobOnMismatch bool
	// Now is the clock (default time.Now).
	Now func() time.Time
}

type job struct {
	id        string
	token     string
	kind      string
	items     []item
	submitted time.Time
	fail      bool
}

// Stats counts what the fake did.
type Stats struct {
	Submitted, Duplicates, Mismatches, CapRefusals, Polls, ResultReads, ExpiredReads, Unauthorized, ResultFaults int
}

// Server is the fake. It is safe for concurrent use.
type Server struct {
	mu      sync.Mutex
	o       Options
	jobs    map[string]*job
	byToken map[string]*job
	faulted map[string]bool // results pages that already failed once (FlakyResults)
	stats   Stats
}

// New returns a fake provider.
func New(o Options) *Server {
	if o.Cap <= 0 {
		o.Cap = 20
	}
	if o.RunFor <= 0 {
		o.RunFor = 2 * time.Second
	}
	if o.Expiry <= 0 {
		o.Expiry = 7 * 24 * time.Hour
	}
	if o.PageSize <= 0 {
		o.PageSize = 50
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Server{o: o, jobs: map[string]*job{}, byToken: map[string]*job{}, faulted: map[string]bool{}}
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *Server) state(j *job, now time.Time) (status string, end time.Time) {
	end = j.submitted.Add(s.o.RunFor)
	switch {
	case now.Before(j.submitted.Add(s.o.RunFor / 3)):
		return queued, end
	case now.Before(end):
		return running, end
	case j.fail:
		return failed, end
	}
	return succeeded, end
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// ServeHTTP answers POST /jobs, GET /jobs/{id} and GET /jobs/{id}/results under any prefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.o.Token || s.o.Token == "" {
		s.mu.Lock()
		s.stats.Unauthorized++
		s.mu.Unlock()
		writeErr(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required")
		return
	}
	path := r.URL.Path
	i := strings.Index(path, "/jobs")
	if i < 0 {
		writeErr(w, http.StatusNotFound, "not_found", "no such endpoint")
		return
	}
	parts := strings.Split(strings.Trim(path[i:], "/"), "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	switch {
	case r.Method == http.MethodPost && len(parts) == 1:
		s.submit(w, r, now)
	case r.Method == http.MethodGet && len(parts) == 2:
		s.status(w, parts[1], now)
	case r.Method == http.MethodGet && len(parts) == 3 && parts[2] == "results":
		s.results(w, parts[1], r.URL.Query().Get("page_token"), now)
	default:
		writeErr(w, http.StatusNotFound, "not_found", "no such endpoint")
	}
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request, now time.Time) {
	var sub submission
	if err := json.NewDecoder(r.Body).Decode(&sub); err != nil || sub.IdempotencyToken == "" || len(sub.Items) == 0 || len(sub.Items) > 500 {
		writeErr(w, http.StatusBadRequest, "invalid_request", "want idempotency_token, kind and 1 to 500 items")
		return
	}
	if j, ok := s.byToken[sub.IdempotencyToken]; ok {
		if j.kind != sub.Kind || !slices.Equal(refs(j.items), refs(sub.Items)) {
			s.stats.Mismatches++
			body := map[string]any{"error": map[string]string{"code": "idempotency_mismatch", "message": "this idempotency token was used with other items"}}
			if !s.o.HideJobOnMismatch {
				body["job_id"] = j.id
			}
			writeJSON(w, http.StatusConflict, body)
			return
		}
		s.stats.Duplicates++
		st, _ := s.state(j, now)
		writeJSON(w, http.StatusOK, s.view(j, st, now))
		return
	}
	inFlight := 0
	for _, j := range s.jobs {
		if st, _ := s.state(j, now); st == queued || st == running {
			inFlight++
		}
	}
	if inFlight >= s.o.Cap {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.o.RunFor.Seconds())+1))
		writeErr(w, http.StatusTooManyRequests, "too_many_jobs", fmt.Sprintf("at most %d unfinished jobs", s.o.Cap))
		return
	}
	s.stats.Submitted++
	j := &job{id: fmt.Sprintf("job-%06d", s.stats.Submitted), token: sub.IdempotencyToken, kind: sub.Kind, items: sub.Items, submitted: now}
	j.fail = s.o.FailEvery > 0 && s.stats.Submitted%s.o.FailEvery == 0
	s.jobs[j.id] = j
	s.byToken[j.token] = j
	writeJSON(w, http.StatusAccepted, s.view(j, queued, now))
}

func refs(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Ref
	}
	return out
}

func (s *Server) view(j *job, st string, now time.Time) map[string]any {
	v := map[string]any{"job_id": j.id, "status": st}
	if st == succeeded || st == failed {
		_, end := s.state(j, now)
		v["results_expire_at"] = end.Add(s.o.Expiry).UTC()
	}
	if st == failed {
		v["error"] = map[string]string{"code": "processing_failed", "message": "the provider could not process the job"}
	}
	return v
}

func (s *Server) find(w http.ResponseWriter, id string, now time.Time) (*job, string, bool) {
	j, ok := s.jobs[id]
	if !ok {
		writeErr(w, http.StatusNotFound, "not_found", "no such job")
		return nil, "", false
	}
	st, end := s.state(j, now)
	if (st == succeeded || st == failed) && !now.Before(end.Add(s.o.Expiry)) {
		s.stats.ExpiredReads++
		writeErr(w, http.StatusGone, "results_expired", "the results of this job have expired")
		return nil, "", false
	}
	return j, st, true
}

func (s *Server) status(w http.ResponseWriter, id string, now time.Time) {
	s.stats.Polls++
	if j, st, ok := s.find(w, id, now); ok {
		writeJSON(w, http.StatusOK, s.view(j, st, now))
	}
}

func (s *Server) results(w http.ResponseWriter, id, pageToken string, now time.Time) {
	j, st, ok := s.find(w, id, now)
	if !ok {
		return
	}
	if st != succeeded {
		writeErr(w, http.StatusConflict, "not_ready", "the job has not succeeded")
		return
	}
	if key := id + "/" + pageToken; s.o.FlakyResults && pageToken != "" && !s.faulted[key] {
		s.faulted[key] = true
		s.stats.ResultFaults++
		writeErr(w, http.StatusServiceUnavailable, "unavailable", "try again later")
		return
	}
	s.stats.ResultReads++
	from, _ := strconv.Atoi(pageToken)
	to := min(from+s.o.PageSize, len(j.items))
	page := resultsPage{Results: []result{}}
	for _, it := range j.items[from:to] {
		page.Results = append(page.Results, result{Ref: it.Ref, Labels: labels(j.kind, it)})
	}
	if to < len(j.items) {
		page.NextPageToken = strconv.Itoa(to)
	}
	writeJSON(w, http.StatusOK, page)
}

var (
	visionLabels = []string{"Person", "Cup", "Coffee", "Food", "Plant", "Bicycle", "Building", "Text", "Clothing", "Outdoors", "Furniture", "Animal"}
	textLabels   = []string{"topic:product", "topic:travel", "topic:food", "topic:event", "intent:question", "intent:purchase"}
	sentiments   = []string{"sentiment:positive", "sentiment:neutral", "sentiment:negative"}
)

// labels derives an item's labels from its input (its URL without the CDN's signed parameters,
// or its text), so the same media always gets the same labels.
func labels(kind string, it item) []label {
	key := it.Text
	if it.MediaURL != "" {
		key, _, _ = strings.Cut(it.MediaURL, "?")
	}
	sum := sha256.Sum256([]byte(key))
	n := binary.BigEndian.Uint64(sum[:8])
	conf := func(i int) float64 { return 50 + float64((n>>(i*5))%50) + 0.5 }
	if kind == "text" {
		return []label{
			{Name: sentiments[n%3], Confidence: conf(1)},
			{Name: textLabels[(n/3)%uint64(len(textLabels))], Confidence: conf(2)},
		}
	}
	out := []label{{Name: visionLabels[n%uint64(len(visionLabels))], Confidence: conf(1)}}
	if second := visionLabels[(n/7)%uint64(len(visionLabels))]; second != out[0].Name {
		out = append(out, label{Name: second, Confidence: conf(2)})
	}
	return out
}
