package bitrix

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Workflows (seed 000 stage 4.6, research/bitrix.md §5.6): templates with their whole activity
// tree, and, as history, the running workflows and the workflow tasks the portal still lists.
// A running workflow cannot be carried over as running state (no REST method resumes one on
// another portal): it is imported as a history record of its template, document, starter and
// start time; tasks likewise, with their status and assignee.
const (
	Workflows         = "workflows"
	WorkflowInstances = "workflow_instances"
	WorkflowTasks     = "workflow_tasks"
)

// templateFields are every field bizproc.workflow.template.list can select (default: ID only).
var templateFields = []string{"ID", "MODULE_ID", "ENTITY", "DOCUMENT_TYPE", "AUTO_EXECUTE", "NAME", "TEMPLATE",
	"PARAMETERS", "VARIABLES", "CONSTANTS", "MODIFIED", "IS_MODIFIED", "USER_ID", "SYSTEM_CODE"}

// noWorkflowsDelta is why every pass of workflows is full (docs/bitrix-delta.md).
const noWorkflowsDelta = "templates, running workflows and their tasks are a page or a few each: a page filtered by " +
	"MODIFIED costs the same call, and only the whole lists show a template deleted or a workflow ended"

func workflowsEntity() *engine.Entity {
	return &engine.Entity{
		Name: Workflows,
		Noun: "workflow templates",
		Help: "workflow templates, and running workflows and tasks as history (users and every CRM entity must be imported and verified first)",
		// Templates name CRM document types, and running workflows CRM records: they wait for
		// every CRM entity a template can belong to.
		Requires: []string{Users, Companies, Contacts, Deals, Smart},
		Lister: &engine.OffsetPages{List: rest.List{Method: "bizproc.workflow.template.list",
			Params: map[string]any{"SELECT": templateFields, "ORDER": map[string]any{"ID": "ASC"}}}, Unfiltered: noWorkflowsDelta},
		Refs: []engine.Ref{
			{Field: "USER_ID", Name: "author", Entity: Users, Optional: true},
			{Field: "TEMPLATE", Name: "users in the template", Entity: Users, Values: templateUsers},
			{Field: "DOCUMENT_TYPE", Name: "smart process", Entity: CRMTypes, Values: documentTypeSmart},
		},
		Dates: []string{"MODIFIED"},
		// The template tree is the workflow engine's: its "" and [] are sent as they are.
		Shapes:   engine.Shapes{Keep: templateParts},
		Batch:    20, // a template's TEMPLATE tree can be large
		Finish:   templateFinish,
		NoFields: "workflow templates have no custom fields",
		// verify lists the users named in templates that cannot be proved (verify_workflows.go).
		Untranslated: templateUntranslated,
		NotMigrated: []string{
			"user references in templates that cannot be proved (a user_<id> of a user not migrated, ids written as plain numbers): kept as on the portal, listed",
		},
	}
}

func workflowInstancesEntity() *engine.Entity {
	return &engine.Entity{
		Name:   WorkflowInstances,
		Noun:   "running workflows",
		Parent: Workflows,
		// Running workflows only, ids like "66e412fdc9bd44.36306599": paged by start, ordered
		// by id (time-ordered), so workflows started during the pass land at the end.
		Lister: &engine.OffsetPages{List: rest.List{Method: "bizproc.workflow.instances",
			Params: map[string]any{"SELECT": []string{"ID", "MODIFIED", "OWNED_UNTIL", "MODULE_ID", "ENTITY", "DOCUMENT_ID",
				"STARTED", "STARTED_BY", "TEMPLATE_ID"}, "ORDER": map[string]any{"ID": "ASC"}}}, Unfiltered: noWorkflowsDelta},
		ParentKey:   "TEMPLATE_ID",
		ParentField: "TEMPLATE_ID",
		Refs:        append(documentRefs(), engine.Ref{Field: "STARTED_BY", Entity: Users, Optional: true}),
		Dates:       []string{"STARTED", "MODIFIED"},
		// MODIFIED moves while a workflow runs: history does not change because of it.
		Volatile: []string{"MODIFIED", "OWNED_UNTIL"},
		Batch:    100,
		Finish:   documentFinish,
		NoFields: "workflows have no custom fields",
		// verify lists the documents that have no target record (verify_workflows.go).
		Untranslated: documentUntranslated,
		NotMigrated: []string{"running state: a running workflow is imported as a history record (template, document, " +
			"who started it and when) and does not go on running on the target; start it again there if it must finish"},
	}
}

func workflowTasksEntity() *engine.Entity {
	return &engine.Entity{
		Name:   WorkflowTasks,
		Noun:   "workflow tasks",
		Parent: Workflows,
		// An administrator's webhook sees every user's tasks without a USER_ID filter; the page
		// documents the offset as START.
		Lister: &engine.OffsetPages{List: rest.List{Method: "bizproc.task.list", StartKey: "START",
			Params: map[string]any{"SELECT": []string{"ID", "WORKFLOW_ID", "DOCUMENT_NAME", "DESCRIPTION", "NAME", "MODIFIED",
				"WORKFLOW_STARTED", "WORKFLOW_STARTED_BY", "OVERDUE_DATE", "WORKFLOW_TEMPLATE_ID", "WORKFLOW_TEMPLATE_NAME",
				"WORKFLOW_STATE", "STATUS", "USER_ID", "USER_STATUS", "MODULE_ID", "ENTITY", "DOCUMENT_ID", "ACTIVITY",
				"ACTIVITY_NAME", "DOCUMENT_URL", "PARAMETERS"}, "ORDER": map[string]any{"ID": "ASC"}}}, Unfiltered: noWorkflowsDelta},
		ParentKey:   "WORKFLOW_TEMPLATE_ID",
		ParentField: "WORKFLOW_TEMPLATE_ID",
		Refs: append(documentRefs(), engine.Ref{Field: "USER_ID", Name: "assignee", Entity: Users, Optional: true},
			engine.Ref{Field: "WORKFLOW_STARTED_BY", Entity: Users, Optional: true}),
		Dates:    []string{"MODIFIED", "WORKFLOW_STARTED", "OVERDUE_DATE"},
		Shapes:   engine.Shapes{Keep: []string{"PARAMETERS"}}, // the activity's own parameters
		Batch:    100,
		Finish:   documentFinish,
		NoFields: "workflow tasks have no custom fields",
		// verify lists the documents that have no target record (verify_workflows.go).
		Untranslated: documentUntranslated,
		NotMigrated: []string{"tasks of workflows that completed more than a day before get (the cloud lists them for a day only)",
			"a pending task cannot be answered on the target: it is a history record of who was asked what, and their answer if any"},
	}
}

var templateUser = regexp.MustCompile(`^user_(\d+)$`)

// walkStrings calls fn with every string in a JSON value, replacing it with fn's result.
func walkStrings(raw json.RawMessage, fn func(s string) string) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers keep their digits
	var v any
	if dec.Decode(&v) != nil {
		return raw
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case string:
			return fn(t)
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		case map[string]any:
			for k := range t {
				t[k] = walk(t[k])
			}
		}
		return v
	}
	return engine.MustJSON(walk(v))
}

// templateParts are the template fields that may name users.
var templateParts = []string{"TEMPLATE", "PARAMETERS", "VARIABLES", "CONSTANTS"}

// templateUsers are the users a template names as "user_<id>" anywhere in its tree, parameters,
// variables and constants: the only form of a user reference that can be proved.
func templateUsers(fields map[string]json.RawMessage) []string {
	var out []string
	for _, part := range templateParts {
		walkStrings(fields[part], func(s string) string {
			if m := templateUser.FindStringSubmatch(s); m != nil {
				out = append(out, m[1])
			}
			return s
		})
	}
	return out
}

var smartDocumentType = regexp.MustCompile(`^DYNAMIC_(\d+)$`)

// documentTypeSmart is the smart process type a template's DOCUMENT_TYPE names, if any.
func documentTypeSmart(fields map[string]json.RawMessage) []string {
	var dt []string
	if json.Unmarshal(fields["DOCUMENT_TYPE"], &dt) == nil && len(dt) == 3 {
		if m := smartDocumentType.FindStringSubmatch(dt[2]); m != nil {
			return []string{m[1]}
		}
	}
	return nil
}

// templateFinish translates a template's provable user references (user_<id> of a migrated
// user) and the smart process type of its document type; the others stay as the portal has
// them and verify lists them.
func templateFinish(fields map[string]json.RawMessage, _ engine.Record, rf *engine.Refs) error {
	for _, part := range templateParts {
		if _, ok := fields[part]; !ok {
			continue
		}
		fields[part] = walkStrings(fields[part], func(s string) string {
			if m := templateUser.FindStringSubmatch(s); m != nil {
				if t, ok := rf.Target(Users, m[1]); ok {
					return "user_" + t
				}
			}
			return s
		})
	}
	var dt []string
	if json.Unmarshal(fields["DOCUMENT_TYPE"], &dt) == nil && len(dt) == 3 {
		if m := smartDocumentType.FindStringSubmatch(dt[2]); m != nil {
			if t, ok := rf.Target(CRMTypes, m[1]); ok {
				dt[2] = "DYNAMIC_" + t
				fields["DOCUMENT_TYPE"] = engine.MustJSON(dt)
			}
		}
	}
	return nil
}

// documentPrefixes are the CRM document ids of workflows: DEAL_12, COMPANY_5, CONTACT_7,
// DYNAMIC_1038_3.
var documentPrefixes = []struct{ prefix, entity string }{{"DEAL_", Deals}, {"COMPANY_", Companies}, {"CONTACT_", Contacts}}

var smartDocumentID = regexp.MustCompile(`^DYNAMIC_(\d+)_(\d+)$`)

// documentRecord is the record a workflow's DOCUMENT_ID names: its entity and source id.
func documentRecord(doc string) (entity, id string, ok bool) {
	for _, p := range documentPrefixes {
		if rest, found := strings.CutPrefix(doc, p.prefix); found {
			if _, err := strconv.Atoi(rest); err == nil {
				return p.entity, rest, true
			}
		}
	}
	if m := smartDocumentID.FindStringSubmatch(doc); m != nil {
		return Smart, m[1] + ":" + m[2], true
	}
	return "", "", false
}

// documentRefs load the target ids of the CRM record a running workflow or task belongs to.
func documentRefs() []engine.Ref {
	var out []engine.Ref
	for _, entity := range []string{Deals, Companies, Contacts, Smart, CRMTypes} {
		out = append(out, engine.Ref{Field: "DOCUMENT_ID", Name: "document", Entity: entity, Values: func(f map[string]json.RawMessage) []string {
			e, id, ok := documentRecord(engine.Text(f, "DOCUMENT_ID"))
			switch {
			case !ok:
				return nil
			case entity == CRMTypes && e == Smart:
				return []string{strings.SplitN(id, ":", 2)[0]}
			case e == entity:
				return []string{id}
			}
			return nil
		}})
	}
	return out
}

// documentTarget translates a CRM document id to the target's ids; ok is false when the record
// (or a smart process's type) has no target id.
func documentTarget(doc string, rf *engine.Refs) (string, bool) {
	entity, id, ok := documentRecord(doc)
	if !ok {
		return doc, false
	}
	t, ok := rf.Target(entity, id)
	if !ok {
		return doc, false
	}
	if entity == Smart {
		et, _, _ := strings.Cut(id, ":")
		tt, ok := rf.Target(CRMTypes, et)
		if !ok {
			return doc, false
		}
		return "DYNAMIC_" + tt + "_" + t, true
	}
	return strings.TrimSuffix(doc, id) + t, true
}

// documentFinish gives a running workflow's or task's CRM document its target ids where they
// are known; a document of a record not migrated (a lead, a list element, a deleted deal) stays
// as the portal names it, and verify lists it.
func documentFinish(fields map[string]json.RawMessage, _ engine.Record, rf *engine.Refs) error {
	if doc := engine.Text(fields, "DOCUMENT_ID"); doc != "" {
		if t, ok := documentTarget(doc, rf); ok {
			fields["DOCUMENT_ID"] = engine.MustJSON(t)
		}
	}
	return nil
}
