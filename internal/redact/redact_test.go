package redact_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/redact"
)

func TestString(t *testing.T) {
	t.Parallel()
	r := redact.New("s3cr3t-token")
	tests := []struct{ in, want string }{
		{"postgres://ingest:hunter22@db:5432/ingest?sslmode=require", "postgres://ingest:xxxxx@db:5432/ingest?sslmode=require"},
		{"host=db user=ingest password=hunter22 dbname=x", "host=db user=ingest password=xxxxx dbname=x"},
		{"POST https://acme.bitrix24.ru/rest/1/q8w7e6r5t4y3u2i1/user.get.json: 401", "POST https://acme.bitrix24.ru/rest/1/xxxxx/user.get.json: 401"},
		{"call failed with token s3cr3t-token inside", "call failed with token xxxxx inside"},
		{"Authorization: Bearer abcdef123456", "Authorization: Bearer xxxxx"},
		{"nothing secret at https://habr.com/ru/articles/1/", "nothing secret at https://habr.com/ru/articles/1/"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestReplaceAttrInLogs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := redact.New("top-secret-value")
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: r.ReplaceAttr}))
	log.Warn("connect failed", "dsn", "postgres://u:pw1234@h/db", "error", errors.New("dial top-secret-value: refused"))
	out := buf.String()
	if strings.Contains(out, "pw1234") || strings.Contains(out, "top-secret-value") {
		t.Errorf("secret leaked into log: %s", out)
	}
	if !strings.Contains(out, "xxxxx") {
		t.Errorf("nothing masked: %s", out)
	}
}
