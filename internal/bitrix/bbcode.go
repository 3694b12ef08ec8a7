package bitrix

import (
	"encoding/json"
	"slices"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// mentionsIn returns the user ids mentioned ([USER=ID]) in the named text fields.
func mentionsIn(fields map[string]json.RawMessage, names ...string) []string {
	var out []string
	for _, name := range names {
		var body string
		_ = json.Unmarshal(fields[name], &body) // a field that is not a string mentions nobody
		for _, m := range mentionPattern.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// translateMentions rewrites every [USER=ID] of a BB-code text with the user's target id; it
// returns the ids that have none (the text is then not to be sent).
func translateMentions(body string, users engine.IDMap) (string, []string) {
	var missing []string
	out := mentionPattern.ReplaceAllStringFunc(body, func(tag string) string {
		m := mentionPattern.FindStringSubmatch(tag)
		t, ok := users[m[1]]
		if !ok {
			if !slices.Contains(missing, m[1]) {
				missing = append(missing, m[1])
			}
			return tag
		}
		return "[USER=" + t + m[2] + "]"
	})
	return out, missing
}

// translateTextFields translates the mentions of the named string fields in place, failing with
// the users that have no target id.
func translateTextFields(fields map[string]json.RawMessage, users engine.IDMap, names ...string) error {
	for _, name := range names {
		var body string
		if json.Unmarshal(fields[name], &body) != nil {
			continue // absent or not a string
		}
		body, missing := translateMentions(body, users)
		if len(missing) > 0 {
			return &UnmappedUsersError{Field: name, Users: missing}
		}
		fields[name] = engine.MustJSON(body)
	}
	return nil
}
