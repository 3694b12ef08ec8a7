package engine

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ingest-dev/ingest/internal/status"
)

// FieldNaming is how the target names an entity's custom fields, by the portal's own rules
// (research/bitrix.md §5.7): a fixed prefix, at most Max characters in all,
// only A-Z, 0-9 and _. A portal's field names already follow them; a name changes when the prefix
// does (it may carry an id that differs on the target) or when a rule
// is not met. The rename is a pure function of the portal's name and the id map, so fields-set,
// set and verify compute it alike and nothing needs to be stored; fields-set logs every rename
// and verify's report lists them.
type FieldNaming struct {
	// Prefix is what the portal puts before every field's own code ("UF_" and more).
	Prefix string
	// Max is the longest name, prefix included (50 on Bitrix24).
	Max int
	// Split, when set, splits a portal's name into its code and the prefix the target gives it,
	// which may depend on the id map (a prefix that holds a source id becomes one that holds
	// its target id). Nil means: the code is what follows Prefix (or "UF_").
	Split func(ctx context.Context, st Store, name string) (code, targetPrefix string, err error)
}

// fieldName is a field's name on the target and why it differs from the portal's.
type fieldName struct {
	Name, Why string
}

// Target returns the target's name of a field and whether it differs from the portal's.
func (n *FieldNaming) Target(ctx context.Context, db status.DB, name string) (fieldName, bool, error) {
	code, prefix := "", n.Prefix
	var err error
	switch upper := strings.ToUpper(name); {
	case n.Split != nil:
		if code, prefix, err = n.Split(ctx, NewStore(db), name); err != nil {
			return fieldName{}, false, err
		}
	case strings.HasPrefix(upper, n.Prefix):
		code = name[len(n.Prefix):]
	case strings.HasPrefix(upper, "UF_"):
		code = name[len("UF_"):]
	default:
		code = name
	}
	var why []string
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		}
		return '_'
	}, code)
	if clean != strings.ToUpper(code) {
		why = append(why, "characters other than A-Z, 0-9 and _ replaced by _")
	}
	out := prefix + clean
	if !strings.HasPrefix(name, prefix) {
		why = append(why, "the target's prefix is "+prefix)
	}
	if n.Max > 0 && len(out) > n.Max {
		sum := sha1.Sum([]byte(name))
		keep := max(n.Max-len(prefix)-7, 1)
		out = prefix + clean[:min(keep, len(clean))] + "_" + strings.ToUpper(hex.EncodeToString(sum[:3]))
		why = append(why, fmt.Sprintf("longer than %d characters: shortened, with a hash of the portal's name so that it stays unique", n.Max))
	}
	if out == name {
		return fieldName{Name: out}, false, nil
	}
	if len(why) == 0 {
		why = append(why, "upper-cased")
	}
	return fieldName{Name: out, Why: strings.Join(why, "; ")}, true, nil
}

// fieldNames returns the target names of the entity's custom fields read by fields-get that
// differ from the portal's, by the portal's name.
func (e *Engine) fieldNames(ctx context.Context, k *Entity) (map[string]fieldName, error) {
	return e.store().fieldNamesOf(ctx, k)
}

// loadRenames returns the portal's name -> the target's name of the entity's renamed fields.
func loadRenames(ctx context.Context, db status.DB, ent *Entity) (map[string]string, error) {
	names, err := NewStore(db).fieldNamesOf(ctx, ent)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(names))
	for from, to := range names {
		out[from] = to.Name
	}
	return out, nil
}

// rename gives the payload's custom fields their names on the target.
func (rf *Refs) rename(fields map[string]json.RawMessage) {
	for from, to := range rf.renames {
		if v, ok := fields[from]; ok {
			delete(fields, from)
			fields[to] = v
		}
	}
}

// renamedFields lists the entity's renamed custom fields for verify's report.
func (e *Engine) renamedFields(ctx context.Context, k *Entity) ([]string, error) {
	names, err := e.fieldNames(ctx, k)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, from := range SortedKeys(names) {
		out = append(out, fmt.Sprintf("%s -> %s (%s)", from, names[from].Name, names[from].Why))
	}
	return out, nil
}
