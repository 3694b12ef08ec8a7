package bitrix

import (
	"context"
	"fmt"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// verifyWorkflows is the workflows' own part of verify: every value kept as the portal has it
// because its mapping cannot be proved, by record. Templates: user_<id> references to users that
// have no target id. Running workflows and tasks: CRM documents that have no target id (a lead,
// a deleted deal) and documents outside the CRM (list elements), which no entity migrates.
func verifyWorkflows(ctx context.Context, e engine.Env, _ *engine.Entity, r *engine.VerifyReport) error {
	for _, name := range []string{Workflows, WorkflowInstances, WorkflowTasks} {
		ent := e.Entity(name)
		err := e.Store().EachImported(ctx, name, func(recs []engine.Record) error {
			rf, err := e.Store().Refs(ctx, ent, recs)
			if err != nil {
				return err
			}
			for _, rec := range recs {
				fields, err := engine.FieldsOf(rec.Payload)
				if err != nil {
					return err
				}
				var reasons []string
				if name == Workflows {
					for _, id := range templateUsers(fields) {
						if _, ok := rf.Target(Users, id); !ok {
							reasons = append(reasons, fmt.Sprintf("user_%s in the template names a user that has no target id: kept as on the portal", id))
						}
					}
				} else if doc := engine.Text(fields, "DOCUMENT_ID"); doc != "" {
					if _, ok := documentTarget(doc, rf); !ok {
						reasons = append(reasons, fmt.Sprintf("document %s (%s) has no target record: kept as the portal names it", doc, engine.Text(fields, "ENTITY")))
					}
				}
				for _, reason := range reasons {
					r.UntranslatedCount++
					if len(r.Untranslated) < engine.MaxListed {
						r.Untranslated = append(r.Untranslated, engine.RecordIssue{Entity: name, SourceID: rec.SourceID, Status: string(rec.Status), Reason: reason})
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
