package habrfake

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// FaultKind names a way the fake misbehaves on one path.
type FaultKind string

// The faults. Each applies to one URL path, whatever its query.
const (
	// FaultStatus answers with Code: 404 and 410 as Habr's error screen,
	// 5xx as the bare HTML page of the front proxy.
	FaultStatus FaultKind = "status"
	// FaultRedirect answers Code (301 or 302) with Location.
	FaultRedirect FaultKind = "redirect"
	// FaultSlow waits Delay (default 2m, past any sane client timeout)
	// before answering normally; it stops waiting when the client leaves.
	FaultSlow FaultKind = "slow"
	// FaultTruncated sends the normal headers with the full Content-Length,
	// half of the body, then drops the connection.
	FaultTruncated FaultKind = "truncated"
	// FaultDeleted answers with the "Доступ к публикации закрыт" screen of
	// a deleted or hidden publication: status Code, by default 200, since a
	// page that loads but holds no article is the hard case.
	FaultDeleted FaultKind = "deleted"
	// FaultListing answers with a real listing page (/ru/all/, 2021): a
	// 200 page full of article snippets but no article.
	FaultListing FaultKind = "listing"
	// FaultMalformedFeed sends the normal body cut in half, with a
	// Content-Length that matches: well delivered, broken XML.
	FaultMalformedFeed FaultKind = "malformed-feed"
	// FaultOffSiteItem moves the first item of a feed to another site
	// (https://example.com/...), leaving the other items alone.
	FaultOffSiteItem FaultKind = "offsite-item"
	// FaultWindows1251 sends the normal body encoded as windows-1251 and
	// says so in Content-Type and in the page's own charset declaration.
	FaultWindows1251 FaultKind = "windows-1251"
	// FaultBadText puts what Postgres cannot store into the article's text, as real pages
	// sometimes carry it: a NUL byte and two bytes that are not UTF-8, at the start of the
	// article body (BadText).
	FaultBadText FaultKind = "bad-text"
)

// defaultSlowDelay outlasts fetch.DefaultTimeout (30s).
const defaultSlowDelay = 2 * time.Minute

// Fault is one misbehaviour; see the FaultKind constants for the fields
// each kind uses.
type Fault struct {
	Kind     FaultKind
	Code     int           // FaultStatus, FaultRedirect, FaultDeleted
	Location string        // FaultRedirect
	Delay    time.Duration // FaultSlow
	// Times, when above 0, limits the fault to the path's next Times requests; after them the
	// path behaves again (a source that recovers).
	Times int
}

// ParseFault reads the short form used on command lines:
//
//	404, 410, 500, 502, 503     a status
//	301:/ru/articles/1/         a redirect (302:... likewise)
//	slow, slow:90s              a slow answer
//	deleted, deleted:404        the deleted-publication screen
//	truncated, listing, malformed-feed, offsite-item, windows-1251
//
// followed by xN to limit it to the next N requests ("503x1": one 503, then the page).
func ParseFault(s string) (Fault, error) {
	times := 0
	if m := timesSuffix.FindStringSubmatch(s); m != nil {
		s = m[1]
		times, _ = strconv.Atoi(m[2])
		if times < 1 {
			return Fault{}, fmt.Errorf("fault %q: x%s: want a count of at least 1", s, m[2])
		}
	}
	f, err := parseFault(s)
	f.Times = times
	return f, err
}

// timesSuffix is ParseFault's "xN" suffix.
var timesSuffix = regexp.MustCompile(`^(.+)x([0-9]+)$`)

func parseFault(s string) (Fault, error) {
	name, arg, hasArg := strings.Cut(s, ":")
	var f Fault
	switch name {
	case "301", "302":
		f = Fault{Kind: FaultRedirect, Location: arg}
		f.Code, _ = strconv.Atoi(name)
	case "slow":
		f = Fault{Kind: FaultSlow}
		if hasArg {
			d, err := time.ParseDuration(arg)
			if err != nil {
				return Fault{}, fmt.Errorf("fault %q: %w", s, err)
			}
			f.Delay = d
		}
	case "deleted":
		f = Fault{Kind: FaultDeleted}
		if hasArg {
			code, err := strconv.Atoi(arg)
			if err != nil {
				return Fault{}, fmt.Errorf("fault %q: bad status: %w", s, err)
			}
			f.Code = code
		}
	case string(FaultTruncated), string(FaultListing), string(FaultMalformedFeed),
		string(FaultOffSiteItem), string(FaultWindows1251), string(FaultBadText):
		f = Fault{Kind: FaultKind(name)}
	default:
		code, err := strconv.Atoi(name)
		if err != nil {
			return Fault{}, fmt.Errorf("fault %q: unknown kind", s)
		}
		f = Fault{Kind: FaultStatus, Code: code}
	}
	if hasArg && f.Kind != FaultRedirect && f.Kind != FaultSlow && f.Kind != FaultDeleted {
		return Fault{}, fmt.Errorf("fault %q: %s takes no argument", s, f.Kind)
	}
	return f, f.validate()
}

func (f Fault) validate() error {
	if f.Times < 0 {
		return fmt.Errorf("fault %s: negative count %d", f.Kind, f.Times)
	}
	switch f.Kind {
	case FaultStatus:
		if f.Code < 400 || f.Code > 599 {
			return fmt.Errorf("fault %s: code %d is not an error status", f.Kind, f.Code)
		}
	case FaultRedirect:
		if f.Code != http.StatusMovedPermanently && f.Code != http.StatusFound || f.Location == "" {
			return fmt.Errorf("fault %s: want code 301 or 302 and a Location, got %d %q", f.Kind, f.Code, f.Location)
		}
	case FaultDeleted:
		if f.Code != 0 && (f.Code < 200 || f.Code > 599) {
			return fmt.Errorf("fault %s: bad code %d", f.Kind, f.Code)
		}
	case FaultSlow:
		if f.Delay < 0 {
			return fmt.Errorf("fault %s: negative delay", f.Kind)
		}
	case FaultTruncated, FaultListing, FaultMalformedFeed, FaultOffSiteItem, FaultWindows1251, FaultBadText:
	default:
		return fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	return nil
}

// SetFault makes path misbehave from the next request on.
func (s *Server) SetFault(path string, f Fault) error {
	if err := f.validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[path] = f
	return nil
}

// ClearFault makes path behave again.
func (s *Server) ClearFault(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.faults, path)
}

// faultFor returns the fault of path for one request, using up one of a limited fault's times.
func (s *Server) faultFor(path string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.faults[path]
	if ok && f.Times > 0 {
		if f.Times == 1 {
			delete(s.faults, path)
		} else {
			s.faults[path] = Fault{Kind: f.Kind, Code: f.Code, Location: f.Location, Delay: f.Delay, Times: f.Times - 1}
		}
	}
	return f, ok
}

// errorScreenText is the error screen's wording for a client error. "Страница не
// найдена" is one of the titles habr.md §2 lists; the detail lines are
// reconstructed.
func errorScreenText(code int) (title, detail string) {
	switch code {
	case http.StatusForbidden:
		return "Доступ закрыт", "У вас нет доступа к этой странице"
	case http.StatusGone:
		return "Страница удалена", "Страница была удалена и больше не доступна"
	default:
		return "Страница не найдена", "Страница устарела, была удалена или не существовала вовсе"
	}
}

// statusPage is the answer for an error status: Habr's own error screen
// for 4xx; for 5xx the bare page of the proxy in front of Habr (the app
// never rendered anything).
func (s *Server) statusPage(code int) *response {
	if code >= 500 {
		text := fmt.Sprintf("%d %s", code, http.StatusText(code))
		body := "<html>\r\n<head><title>" + text + "</title></head>\r\n<body>\r\n<center><h1>" + text +
			"</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
		return &response{status: code, contentType: "text/html", body: []byte(body)}
	}
	title, detail := errorScreenText(code)
	return &response{status: code, contentType: htmlContentType, body: s.tmpl.renderError(code, title, detail)}
}

// deletedPage is the screen of a publication its author hid or a moderator
// removed (habr.md §2: code 403, "Доступ к публикации закрыт").
func (s *Server) deletedPage(code int) *response {
	if code == 0 {
		code = http.StatusOK
	}
	body := s.tmpl.renderError(http.StatusForbidden, "Доступ к публикации закрыт",
		"Публикация скрыта автором или удалена модератором")
	return &response{status: code, contentType: htmlContentType, body: body}
}

func redirect(code int, location string) *response {
	return &response{
		status:      code,
		contentType: htmlContentType,
		location:    location,
		body:        []byte(`<a href="` + escape(location) + `">` + http.StatusText(code) + "</a>.\n"),
	}
}

// moveFirstItemOffSite points the first <item> of a feed at another site.
func moveFirstItemOffSite(feed []byte) []byte {
	start := bytes.Index(feed, []byte("<item>"))
	if start < 0 {
		return feed
	}
	end := bytes.Index(feed[start:], []byte("</item>"))
	if end < 0 {
		return feed
	}
	end += start
	item := bytes.ReplaceAll(feed[start:end], []byte("https://habr.com/"), []byte("https://example.com/"))
	return slices.Concat(feed[:start], item, feed[end:])
}

// charsetDecl finds the UTF-8 declaration in a page's <meta> or an XML
// prolog.
var charsetDecl = regexp.MustCompile(`(?i)(charset=["']?|encoding=["'])utf-8`)

// toWindows1251 re-encodes a response as windows-1251. Characters the code
// page lacks become numeric character references, as a server would write
// them.
func toWindows1251(res *response) *response {
	enc, _ := charset.Lookup("windows-1251")
	encoder := enc.NewEncoder()
	src := charsetDecl.ReplaceAll(res.body, []byte("${1}windows-1251"))
	out := make([]byte, 0, len(src))
	var buf [utf8.UTFMax]byte
	for _, r := range string(src) {
		if r < utf8.RuneSelf {
			out = append(out, byte(r))
			continue
		}
		b, err := encoder.Bytes(buf[:utf8.EncodeRune(buf[:], r)])
		if err != nil {
			out = fmt.Appendf(out, "&#%d;", r)
			continue
		}
		out = append(out, b...)
	}
	ct := res.contentType
	if i := strings.Index(ct, ";"); i >= 0 {
		ct = ct[:i]
	}
	return &response{status: res.status, contentType: ct + "; charset=windows-1251", location: res.location, body: out}
}

// BadText is what FaultBadText puts at the start of the article body: a NUL
// and two bytes that are not UTF-8 (a Latin-1 "é" and a lone continuation byte).
const BadText = "Bad\x00 text: caf\xe9 \x80. "

// withBadText puts BadText at the start of the article body of a page (inside its xhtml div).
func withBadText(body []byte) []byte {
	const div = `<div xmlns="http://www.w3.org/1999/xhtml">`
	i := bytes.Index(body, []byte(div))
	if i < 0 {
		return body
	}
	at := i + len(div)
	out := make([]byte, 0, len(body)+len(BadText))
	out = append(out, body[:at]...)
	out = append(out, BadText...)
	return append(out, body[at:]...)
}
