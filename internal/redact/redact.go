// Package redact keeps secrets (DSN passwords, webhook tokens) out of logs, errors and the
// database: every line the program writes goes through a Redactor.
package redact

import (
	"log/slog"
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "xxxxx"

var (
	// postgres://user:secret@host, https://user:secret@host
	userinfo = regexp.MustCompile(`(://[^:/@\s]*:)[^@\s/]+@`)
	// key=value DSNs: password=secret
	kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('[^']*'|[^\s&]+)`)
	// Bitrix24 incoming webhooks: https://portal.bitrix24.ru/rest/1/0123abcd.../
	webhookToken = regexp.MustCompile(`(/rest/\d+/)[A-Za-z0-9_]{6,}`)
	// Authorization headers and bearer tokens that end up in error texts.
	bearer = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{6,}`)
)

// Redactor hides known secrets and anything shaped like one. The zero value hides the shapes only.
type Redactor struct {
	secrets []string
}

// New returns a Redactor that also hides each given secret wherever it appears verbatim (a
// token may surface on its own, e.g. in a URL-decoded error).
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		r.Add(s)
	}
	return r
}

// Add registers one more secret. Short strings are ignored: masking "1" everywhere would garble
// every log line while protecting nothing.
func (r *Redactor) Add(secret string) {
	if len(secret) >= 4 {
		r.secrets = append(r.secrets, secret)
		if esc := url.QueryEscape(secret); esc != secret {
			r.secrets = append(r.secrets, esc)
		}
	}
}

// String returns s with every secret masked.
func (r *Redactor) String(s string) string {
	if r != nil {
		for _, secret := range r.secrets {
			s = strings.ReplaceAll(s, secret, Mask)
		}
	}
	s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	s = kvPassword.ReplaceAllString(s, "${1}"+Mask)
	s = webhookToken.ReplaceAllString(s, "${1}"+Mask)
	s = bearer.ReplaceAllString(s, "${1}"+Mask)
	return s
}

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr that masks secrets in string, error and
// stringer values.
func (r *Redactor) ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(r.String(v.String()))
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			a.Value = slog.StringValue(r.String(x.Error()))
		case interface{ String() string }:
			a.Value = slog.StringValue(r.String(x.String()))
		}
	}
	return a
}
