package targetfake

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// references are the payload fields of the live feed and task entities that name records of
// other entities by target id (docs/target-import-api.md, "Live feed" and "Tasks"): the fake
// refuses an item naming a record it does not hold with reference_not_found, as a real target
// must, so that a migration sending a child before its parent, or a source id where a target
// id belongs, is caught. A field holds one id (a string), a list of ids, or null for none; a
// path "items.created_by" looks into every element of a list.
var references = map[string]map[string]string{
	"feed":            {"AUTHOR_ID": "users"},
	"feed_recipients": {"post_id": "feed", "group_id": "groups", "user_id": "users"},
	"feed_comments":   {"post_id": "feed", "author_id": "users"},
	"tasks": {"createdBy": "users", "responsibleId": "users", "groupId": "groups", "parentId": "tasks",
		"accomplices": "users", "auditors": "users", "changedBy": "users", "statusChangedBy": "users", "closedBy": "users"},
	"task_checklists": {"task_id": "tasks", "items.created_by": "users", "items.toggled_by": "users",
		"items.members.user_id": "users"},
	"task_comments": {"task_id": "tasks", "author_id": "users"},
}

// badReference says which reference of a payload names no record held, "" when all do.
func (s *Server) badReference(entity string, payload json.RawMessage) string {
	refs := references[entity]
	if len(refs) == 0 {
		return ""
	}
	var doc any
	if json.Unmarshal(payload, &doc) != nil {
		return ""
	}
	for _, path := range sortedKeys(refs) {
		to := s.entity(refs[path])
		for _, id := range valuesAt(doc, strings.Split(path, ".")) {
			if _, ok := to.byTarget[id]; !ok {
				return fmt.Sprintf("%s: %s %q names no record held", path, strings.TrimSuffix(refs[path], "s"), id)
			}
		}
	}
	return ""
}

// valuesAt collects the ids found along a path: strings, the strings of a list; null is none.
func valuesAt(v any, path []string) []string {
	if list, ok := v.([]any); ok {
		var out []string
		for _, e := range list {
			out = append(out, valuesAt(e, path)...)
		}
		return out
	}
	if len(path) == 0 {
		if s, ok := v.(string); ok {
			return []string{s}
		}
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	return valuesAt(m[path[0]], path[1:])
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
