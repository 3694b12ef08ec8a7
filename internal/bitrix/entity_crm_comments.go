package bitrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// CRMComments are the timeline comments of companies, contacts and deals
// (crm.timeline.comment.list, research/bitrix.md §5.7). The method requires one record
// (ENTITY_TYPE and ENTITY_ID), so, like product rows, they cost one command per record and are a
// command of their own after the records they belong to. Other timeline entries (calls,
// e-mails, meetings, CRM tasks) have no equivalent import and are not migrated.
const CRMComments = "crm_comments"

// commentOwners are the entities whose comments are read, with their ENTITY_TYPE.
var commentOwners = []struct{ entity, typ string }{{Companies, "company"}, {Contacts, "contact"}, {Deals, "deal"}}

// commentType is the ENTITY_TYPE of an entity's comments.
func commentType(entity string) string {
	for _, o := range commentOwners {
		if o.entity == entity {
			return o.typ
		}
	}
	return ""
}

func crmCommentsEntity() *engine.Entity {
	refs := []engine.Ref{{Field: "AUTHOR_ID", Name: "author", Entity: Users, Optional: true},
		{Field: "COMMENT", Name: "mentions", Entity: Users, Values: commentMentions}}
	for _, o := range commentOwners {
		refs = append(refs, engine.Ref{Field: "ENTITY_ID", Name: o.typ, Entity: o.entity, Values: func(f map[string]json.RawMessage) []string {
			if strings.EqualFold(engine.Text(f, "ENTITY_TYPE"), o.typ) {
				return []string{engine.Text(f, "ENTITY_ID")}
			}
			return nil
		}})
	}
	return &engine.Entity{
		Name:     CRMComments,
		Noun:     "timeline comments",
		Help:     "timeline comments of companies, contacts and deals (deals must be imported and verified first; one call per 50 records)",
		Requires: []string{Users, Companies, Contacts, Deals},
		Lister: &engine.PerRecord{Of: []string{Companies, Contacts, Deals}, Method: "crm.timeline.comment.list",
			Params: func(entity, id string) map[string]any {
				return map[string]any{"filter": map[string]any{"ENTITY_ID": id, "ENTITY_TYPE": commentType(entity)},
					"select": []string{"ID", "CREATED", "ENTITY_ID", "ENTITY_TYPE", "AUTHOR_ID", "COMMENT", "FILES"},
					"order":  map[string]any{"ID": "ASC"}}
			},
			Gone: recordGone},
		Refs:     refs,
		Dates:    []string{"CREATED"},
		Batch:    100,
		Finish:   commentFinish,
		NoFields: "timeline comments have no custom fields",
		NotMigrated: []string{"timeline entries other than comments (calls, e-mails, meetings, CRM tasks)",
			"comments of smart process items", "files attached to comments: FILES keeps the portal's links"},
	}
}

// commentMentions are the users a comment's BB-code text mentions ([USER=503]...[/USER]).
func commentMentions(fields map[string]json.RawMessage) []string {
	var out []string
	for _, m := range mentionPattern.FindAllStringSubmatch(engine.Text(fields, "COMMENT"), -1) {
		out = append(out, m[1])
	}
	return out
}

// commentFinish gives a comment its record's target id (by ENTITY_TYPE) and its mentions the
// target's user ids; a mention of a user without one fails the comment.
func commentFinish(fields map[string]json.RawMessage, _ engine.Record, rf *engine.Refs) error {
	typ, id := strings.ToLower(engine.Text(fields, "ENTITY_TYPE")), engine.Text(fields, "ENTITY_ID")
	for _, o := range commentOwners {
		if o.typ != typ {
			continue
		}
		target, ok := rf.Target(o.entity, id)
		if !ok {
			return &engine.UnresolvedError{Field: "ENTITY_ID", Entity: o.entity, SourceID: id}
		}
		fields["ENTITY_ID"] = engine.MustJSON(target)
	}
	body := engine.Text(fields, "COMMENT")
	var missing []string
	body = mentionPattern.ReplaceAllStringFunc(body, func(tag string) string {
		m := mentionPattern.FindStringSubmatch(tag)
		t, ok := rf.Target(Users, m[1])
		if !ok {
			missing = append(missing, m[1])
			return tag
		}
		return "[USER=" + t + m[2] + "]"
	})
	if len(missing) > 0 {
		return fmt.Errorf("COMMENT mentions user(s) %s, who have no target id (not imported users)", strings.Join(missing, ", "))
	}
	if _, ok := fields["COMMENT"]; ok {
		fields["COMMENT"] = engine.MustJSON(body)
	}
	return nil
}

// recordGone recognises crm.timeline.comment.list's answer for a record deleted since its get:
// NOT_FOUND, or a 400 with no code and the description "Not found" (what the portal answers for
// a deleted deal's timeline, though its documentation lists only "Access denied.").
func recordGone(err error) bool {
	if rest.HasCode(err, "NOT_FOUND") {
		return true
	}
	apiErr, ok := errors.AsType[*rest.APIError](err)
	return ok && apiErr.Code == "" && strings.EqualFold(strings.TrimSpace(apiErr.Description), "Not found")
}
