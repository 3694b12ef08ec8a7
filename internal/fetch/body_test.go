package fetch

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

func TestGetConvertsTextToUTF8(t *testing.T) {
	const text = "Как создавать 3d модели с помощью Python — «Хабр»"
	cp1251 := encode(t, "windows-1251", text)
	metaPage := encode(t, "windows-1251",
		`<html><head><meta http-equiv="content-type" content="text/html; charset=windows-1251"></head><body>`+text+`</body></html>`)

	tests := []struct {
		name        string
		contentType string
		body        []byte
		want        []byte
	}{
		{
			name:        "windows-1251 by Content-Type",
			contentType: "text/html; charset=windows-1251",
			body:        cp1251,
			want:        []byte(text),
		},
		{
			name:        "windows-1251 by meta",
			contentType: "text/html",
			body:        metaPage,
			want:        []byte(`<html><head><meta http-equiv="content-type" content="text/html; charset=windows-1251"></head><body>` + text + `</body></html>`),
		},
		{
			name:        "UTF-8 without a charset is kept",
			contentType: "text/html",
			body:        []byte(text),
			want:        []byte(text),
		},
		{
			name:        "valid UTF-8 wins over a wrong declaration",
			contentType: "text/html; charset=windows-1251",
			body:        []byte(text),
			want:        []byte(text),
		},
		{
			name:        "invalid UTF-8 becomes U+FFFD",
			contentType: "text/plain; charset=utf-8",
			body:        []byte("ok \xff\xfe ok"),
			want:        []byte("ok \uFFFD ok"),
		},
		{
			name:        "XML feeds are passed through",
			contentType: "application/rss+xml; charset=windows-1251",
			body:        cp1251,
			want:        cp1251,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				w.Write(tt.body)
			}))
			defer srv.Close()

			resp, err := newClient(t, srv.URL, nil).Get(context.Background(), "/")
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if !bytes.Equal(resp.Body, tt.want) {
				t.Errorf("body = %q, want %q", resp.Body, tt.want)
			}
			if isText(tt.contentType) && !utf8.Valid(resp.Body) {
				t.Errorf("text body is not valid UTF-8: %q", resp.Body)
			}
		})
	}
}

func encode(t *testing.T, name, s string) []byte {
	t.Helper()
	enc, _ := charset.Lookup(name)
	if enc == nil {
		t.Fatalf("unknown charset %s", name)
	}
	b, err := enc.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encode %s: %v", name, err)
	}
	return b
}
