package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// BuildQuery encodes params the way PHP's http_build_query does, which is
// what the portal's parse_str expects inside a batch command
// ("user.get?FILTER%5B%3EID%5D=0&start=-1"):
//
//   - nested objects and lists become bracketed keys: FILTER[>ID]=0,
//     select[0]=ID; keys and values are URL-encoded, brackets included;
//   - true and false become 1 and 0, null values are left out, and so are
//     empty lists and objects (PHP drops empty arrays);
//   - keys keep the order they have in params' JSON form, which matters for
//     multi-key sort orders (Go maps marshal with sorted keys; pass a
//     struct or json.RawMessage to control the order).
//
// params is anything that marshals to a JSON object or array; nil gives "".
func BuildQuery(params any) (string, error) {
	if params == nil {
		return "", nil
	}
	raw, ok := params.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(params); err != nil {
			return "", fmt.Errorf("build query: %w", err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b queryBuilder
	tok, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("build query: %w", err)
	}
	if tok == nil {
		return "", nil
	}
	if d, ok := tok.(json.Delim); !ok || (d != '{' && d != '[') {
		return "", fmt.Errorf("build query: params must be an object or a list, got %v", tok)
	}
	if err := b.container(dec, tok.(json.Delim), ""); err != nil {
		return "", fmt.Errorf("build query: %w", err)
	}
	return b.String(), nil
}

type queryBuilder struct{ strings.Builder }

// container writes the members of the object or list whose opening
// delimiter was just read, each under prefix[key] (or key at the top).
func (b *queryBuilder) container(dec *json.Decoder, open json.Delim, prefix string) error {
	for i := 0; dec.More(); i++ {
		key := fmt.Sprint(i)
		if open == '{' {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key = tok.(string)
		}
		if prefix != "" {
			key = prefix + "[" + key + "]"
		}
		if err := b.value(dec, key); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing delimiter
	return err
}

func (b *queryBuilder) value(dec *json.Decoder, key string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	var v string
	switch t := tok.(type) {
	case json.Delim:
		return b.container(dec, t, key)
	case nil:
		return nil
	case bool:
		v = "0"
		if t {
			v = "1"
		}
	case json.Number:
		v = t.String()
	case string:
		v = t
	default:
		return fmt.Errorf("unexpected token %v", tok)
	}
	if b.Len() > 0 {
		b.WriteByte('&')
	}
	b.WriteString(url.QueryEscape(key))
	b.WriteByte('=')
	b.WriteString(url.QueryEscape(v))
	return nil
}
