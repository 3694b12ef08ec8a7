// Package habrfake is a fake Habr: a real HTTP server that serves RSS feeds
// and article pages at Habr's own paths, built from the real samples in
// internal/fakes/fixtures/habr, and misbehaves on demand.
//
// What it serves:
//
//   - The seven real article pages, verbatim, at their real paths
//     (/post/1000/, /ru/post/568382/, /ru/articles/769102/, ...; the
//     geektimes.ru page at /ru/post/300211/, where habr.com took it over).
//   - A page for every other publication it knows, rendered from the raw
//     2021 page of article 568382 used as a template: the 20 real posts of
//     the API fixture (with their real full text), the items of the three
//     real feeds (with the item's lead as the text, all a feed has), and
//     Options.ExtraArticles synthetic ones. Rendered pages have no
//     window.__INITIAL_STATE__: the template's holds article 568382.
//   - Feeds: the real fixture feeds verbatim (FeedAll2019, FeedInteresting,
//     FeedMedsurg) and four generated from everything above in today's item
//     format (FeedArticles, FeedNews, and the English site's FeedArticlesEN,
//     FeedNewsEN), filtered by ?fl= language. Every item of every feed
//     resolves to a page the fake serves.
//   - A 301 to the canonical path for another URL shape of a known article
//     (as habr.com does), and Habr's "Страница не найдена" screen with a 404
//     for anything else.
//
// Responses are gzipped when the client accepts it. Faults (see FaultKind)
// are set per path, from Options or at run time, and every request is
// counted per path so tests can prove that a cache hit made no request.
package habrfake

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	embedded "github.com/ingest-dev/ingest/internal/fakes/fixtures"
)

// Options configure a Server.
type Options struct {
	// Fixtures is a Habr fixtures directory laid out as
	// internal/fakes/fixtures/habr (html/, rss/, api/); nil serves those
	// embedded copies.
	Fixtures fs.FS
	// ExtraArticles adds that many synthetic publications, with
	// deterministic ids (from 1100001), titles and dates, to the generated
	// feeds; every fifth is news. Use ?limit=N on FeedArticles to list them
	// all.
	ExtraArticles int
	// Faults maps URL paths to faults active from the start.
	Faults map[string]Fault
}

// Server is the fake. It is safe for concurrent use.
type Server struct {
	tmpl        *pageTemplate
	listing     []byte
	byPath      map[string]*article
	byID        map[int]*article
	newestFirst []*article
	rawFeeds    map[string][]byte

	mu       sync.Mutex
	faults   map[string]Fault
	requests map[string]int
	total    int
}

// New loads the fixtures and builds the catalogue.
func New(opts Options) (*Server, error) {
	fsys := opts.Fixtures
	if fsys == nil {
		fsys = embedded.Habr()
	}
	s := &Server{
		byPath:   make(map[string]*article),
		byID:     make(map[int]*article),
		rawFeeds: make(map[string][]byte),
		faults:   make(map[string]Fault),
		requests: make(map[string]int),
	}

	src, err := fs.ReadFile(fsys, templateFile)
	if err != nil {
		return nil, fmt.Errorf("habrfake: %w", err)
	}
	if s.tmpl, err = newPageTemplate(src); err != nil {
		return nil, fmt.Errorf("habrfake: %s: %w", templateFile, err)
	}
	if s.listing, err = fs.ReadFile(fsys, listingFile); err != nil {
		return nil, fmt.Errorf("habrfake: %w", err)
	}
	for path, file := range map[string]string{
		FeedAll2019:     feedAll2019,
		FeedInteresting: feedBest2018,
		FeedMedsurg:     feedUserMedsurg,
	} {
		if s.rawFeeds[path], err = fs.ReadFile(fsys, file); err != nil {
			return nil, fmt.Errorf("habrfake: %w", err)
		}
	}

	// Earlier sources win when an id appears twice: a real page beats a
	// rendered one, a full text beats a lead.
	pages, err := loadFixturePages(fsys)
	if err != nil {
		return nil, fmt.Errorf("habrfake: %w", err)
	}
	posts, err := loadAPIPosts(fsys)
	if err != nil {
		return nil, fmt.Errorf("habrfake: %w", err)
	}
	s.add(pages...)
	s.add(posts...)
	for _, file := range []string{feedUserMedsurg, feedAll2019, feedBest2018} {
		items, err := loadFeedItems(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("habrfake: %w", err)
		}
		s.add(items...)
	}
	if opts.ExtraArticles > 0 {
		s.add(extraArticles(opts.ExtraArticles, posts)...)
	}
	sort.SliceStable(s.newestFirst, func(i, j int) bool {
		a, b := s.newestFirst[i], s.newestFirst[j]
		if !a.published.Equal(b.published) {
			return a.published.After(b.published)
		}
		return a.id > b.id
	})

	for path, f := range opts.Faults {
		if err := s.SetFault(path, f); err != nil {
			return nil, fmt.Errorf("habrfake: %s: %w", path, err)
		}
	}
	return s, nil
}

func (s *Server) add(articles ...*article) {
	for _, a := range articles {
		if _, dup := s.byID[a.id]; dup {
			continue
		}
		s.byID[a.id] = a
		s.byPath[a.path] = a
		s.newestFirst = append(s.newestFirst, a)
	}
}

// Handler returns the fake as an http.Handler.
func (s *Server) Handler() http.Handler { return s }

// ServeHTTP counts the request, then answers it, applying the path's fault.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.count(r.URL.Path)
	fault, _ := s.faultFor(r.URL.Path)

	if fault.Kind == FaultSlow && !sleep(r.Context(), fault.Delay) {
		return // the client left
	}

	var res *response
	switch fault.Kind {
	case FaultStatus:
		res = s.statusPage(fault.Code)
	case FaultRedirect:
		res = redirect(fault.Code, fault.Location)
	case FaultDeleted:
		res = s.deletedPage(fault.Code)
	case FaultListing:
		res = &response{status: http.StatusOK, contentType: htmlContentType, body: s.listing}
	default:
		res = s.route(r)
	}

	switch fault.Kind {
	case FaultMalformedFeed:
		res.body = res.body[:len(res.body)/2]
	case FaultOffSiteItem:
		res.body = moveFirstItemOffSite(res.body)
	case FaultWindows1251:
		res = toWindows1251(res)
	case FaultBadText:
		res.body = withBadText(res.body)
	case FaultTruncated:
		writeTruncated(w, res)
		return
	}
	write(w, r, res)
}

// route answers a request that no fault replaced.
func (s *Server) route(r *http.Request) *response {
	path := r.URL.Path
	if raw, ok := s.rawFeeds[path]; ok {
		return &response{status: http.StatusOK, contentType: feedContentType, body: raw}
	}
	if info, ok := generatedFeeds[path]; ok {
		return s.generatedFeed(info, r.URL.Query())
	}
	if a, ok := s.byPath[path]; ok {
		body := a.page
		if body == nil {
			body = s.tmpl.render(a)
		}
		return &response{status: http.StatusOK, contentType: htmlContentType, body: body}
	}
	if id, ok := idFromPath(path); ok {
		if a, ok := s.byID[id]; ok {
			return redirect(http.StatusMovedPermanently, a.path)
		}
	}
	return s.statusPage(http.StatusNotFound)
}

// sleep waits d (or the default slow delay) unless ctx ends first, and
// reports whether it waited the whole time.
func sleep(ctx context.Context, d time.Duration) bool {
	if d == 0 {
		d = defaultSlowDelay
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Server) count(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[path]++
	s.total++
}

// Requests returns how many requests reached path (the URL path, without
// query), whatever was answered.
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// TotalRequests returns how many requests reached the server.
func (s *Server) TotalRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Start runs a new fake on a local port until the test ends, and returns it
// with its base URL.
func Start(t testing.TB, opts Options) (*Server, string) {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv.URL
}
