package httplimit_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ingest-dev/ingest/internal/httplimit"
	"github.com/ingest-dev/ingest/internal/redact"
)

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://Portal.example/rest/", "https://portal.example:443/other", true},
		{"http://portal.example/", "http://portal.example:80/", true},
		{"https://portal.example/", "http://portal.example/", false},
		{"http://portal.example/", "https://portal.example/", false},
		{"https://portal.example/", "https://portal.example:8443/", false},
		{"https://portal.example/", "https://evil.example/", false},
		{"http://127.0.0.1:8080/", "http://10.0.0.1:8080/", false},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := httplimit.SameOrigin(a, b); got != tc.same {
			t.Errorf("SameOrigin(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

func TestCheckMasksWhereItPointed(t *testing.T) {
	from, _ := url.Parse("http://127.0.0.1:8080/rest/1/s3cr3tT0ken/user.get.json")
	r := redact.New("s3cr3tT0ken")
	for _, tc := range []struct {
		location, want string
		ok             bool
	}{
		{"/rest/1/s3cr3tT0ken/user.get", "", true},
		{"http://10.0.0.9/rest/1/s3cr3tT0ken/user.get.json?auth=abc#frag",
			"refused the redirect (HTTP 301) to http://10.0.0.9/rest/1/xxxxx/user.get.json?auth=xxxxx#xxxxx: another origin than http://127.0.0.1:8080", false},
		{"https://u:p@127.0.0.1:8080/x", "to https://xxxxx@127.0.0.1:8080/x: another origin", false},
		{"", "to nowhere: the answer has no Location", false},
	} {
		to, err := httplimit.Check("bitrix user.get", 301, from, tc.location, r)
		if tc.ok {
			if err != nil || to.Host != from.Host {
				t.Errorf("%q: %v %v", tc.location, to, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%q: err %v, want it to contain %q and no secret", tc.location, err, tc.want)
		}
	}
	https, _ := url.Parse("https://portal.example/")
	if _, err := httplimit.Check("c", 302, https, "http://portal.example/", r); err == nil || !strings.Contains(err.Error(), "leaves https for plain http") {
		t.Errorf("https to http: %v", err)
	}
}

// TestSameOriginRedirects follows a client over two origins: what it may follow on its own,
// and that nothing carrying the credential reaches the other.
func TestSameOriginRedirects(t *testing.T) {
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
	}))
	defer other.Close()
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/x?token=secret", http.StatusTemporaryRedirect)
		case "/here":
			http.Redirect(w, r, "/final", http.StatusPermanentRedirect)
		case "/seeother":
			http.Redirect(w, r, "/final", http.StatusSeeOther)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusTemporaryRedirect)
		case "/final":
			body, _ := io.ReadAll(r.Body)
			_, _ = w.Write([]byte(r.Method + " " + string(body)))
		}
	}))
	defer home.Close()
	client := &http.Client{CheckRedirect: httplimit.SameOriginRedirects(func(r *http.Request) string { return r.Method + " " + r.URL.Path }, redact.New())}
	post := func(path string) (string, error) {
		resp, err := client.Post(home.URL+path, "text/plain", strings.NewReader("batch"))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if got, err := post("/here"); err != nil || got != "POST batch" {
		t.Errorf("same origin 308: %q %v, want the POST re-sent with its body", got, err)
	}
	// http.Client wraps the refusal in a *url.Error quoting the URL: clients keep only the cause.
	_, err := post("/away")
	var re *httplimit.RedirectError
	if !errors.As(err, &re) || re.Status != 307 || !strings.Contains(re.Location, "token=xxxxx") || strings.Contains(re.Error(), "secret") {
		t.Errorf("other origin: %v", err)
	}
	if _, err := post("/seeother"); !errors.As(err, &re) || !strings.Contains(re.Reason, "turn the POST into a GET") {
		t.Errorf("303: %v", err)
	}
	if _, err := post("/loop"); !errors.As(err, &re) || !strings.Contains(re.Reason, "more than 5") {
		t.Errorf("loop: %v", err)
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}
}
