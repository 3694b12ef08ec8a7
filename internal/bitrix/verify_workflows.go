package bitrix

import (
	"encoding/json"
	"fmt"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// Workflow values kept as the portal has them because their mapping cannot be proved, which
// verify lists by record (Entity.Untranslated). Templates: user_<id> references to users that
// have no target id. Running workflows and tasks: CRM documents that have no target id (a lead,
// a deleted deal) and documents outside the CRM (list elements), which no entity migrates.

// templateUntranslated names a template's users that have no target id.
func templateUntranslated(fields map[string]json.RawMessage, rf *engine.Refs) []string {
	var reasons []string
	for _, id := range templateUsers(fields) {
		if _, ok := rf.Target(Users, id); !ok {
			reasons = append(reasons, fmt.Sprintf("user_%s in the template names a user that has no target id: kept as on the portal", id))
		}
	}
	return reasons
}

// documentUntranslated names the document of a running workflow or task that has no target
// record.
func documentUntranslated(fields map[string]json.RawMessage, rf *engine.Refs) []string {
	doc := engine.Text(fields, "DOCUMENT_ID")
	if doc == "" {
		return nil
	}
	if _, ok := documentTarget(doc, rf); ok {
		return nil
	}
	return []string{fmt.Sprintf("document %s (%s) has no target record: kept as the portal names it", doc, engine.Text(fields, "ENTITY"))}
}
