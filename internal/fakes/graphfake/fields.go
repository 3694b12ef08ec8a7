package graphfake

import (
	"fmt"
	"strings"
)

// field is one entry of a Graph API fields expression: a name, modifiers such as
// .limit(100).after(X) or .username(name), and nested fields in braces.
type field struct {
	name string
	mods map[string]string
	sub  []field
}

// parseFields reads "id,caption,children{id,media_url},media.limit(5).after(QVF){id}".
func parseFields(s string) ([]field, error) {
	p := &fieldParser{s: s}
	out, err := p.list()
	if err != nil {
		return nil, err
	}
	if p.i != len(p.s) {
		return nil, fmt.Errorf("unexpected %q at %d", p.s[p.i:], p.i)
	}
	return out, nil
}

type fieldParser struct {
	s string
	i int
}

func (p *fieldParser) list() ([]field, error) {
	var out []field
	for p.i < len(p.s) && p.s[p.i] != '}' {
		f, err := p.field()
		if err != nil {
			return nil, err
		}
		out = append(out, f)
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
		}
	}
	return out, nil
}

func (p *fieldParser) ident() string {
	start := p.i
	for p.i < len(p.s) && strings.IndexByte(",.{}()", p.s[p.i]) < 0 {
		p.i++
	}
	return strings.TrimSpace(p.s[start:p.i])
}

func (p *fieldParser) field() (field, error) {
	f := field{name: p.ident()}
	if f.name == "" {
		return f, fmt.Errorf("empty field name at %d", p.i)
	}
	for p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		mod := p.ident()
		if p.i >= len(p.s) || p.s[p.i] != '(' {
			return f, fmt.Errorf("modifier %q without (value)", mod)
		}
		end := strings.IndexByte(p.s[p.i:], ')')
		if end < 0 {
			return f, fmt.Errorf("unclosed modifier %q", mod)
		}
		if f.mods == nil {
			f.mods = map[string]string{}
		}
		f.mods[mod] = p.s[p.i+1 : p.i+end]
		p.i += end + 1
	}
	if p.i < len(p.s) && p.s[p.i] == '{' {
		p.i++
		sub, err := p.list()
		if err != nil {
			return f, err
		}
		if p.i >= len(p.s) || p.s[p.i] != '}' {
			return f, fmt.Errorf("unclosed {} after %q", f.name)
		}
		p.i++
		f.sub = sub
	}
	return f, nil
}
