package engine

import (
	"context"
	"fmt"
	"strings"
)

// noteUncreatableFields names, in a note of verify's report, the entity's custom fields that are
// not on the target when the target creates only some types of them (CustomFields.Creatable):
// fields-set left them out, so their values are not migrated. It is a note, not a problem: no
// run of set can bring them.
func (e *Engine) noteUncreatableFields(ctx context.Context, ent *Entity, r *VerifyReport) error {
	if ent.Fields == nil || len(ent.Fields.Creatable) == 0 {
		return nil
	}
	missing, err := e.store().fieldsNotOnTarget(ctx, ent.Name)
	if err != nil {
		return fmt.Errorf("verify %s: %w", ent.Name, err)
	}
	if len(missing) > 0 {
		r.Notes = append(r.Notes, "custom fields not on the target, their values not migrated (the target creates "+
			singular(ent.noun())+" fields only of types "+strings.Join(ent.Fields.Creatable, ", ")+"): "+strings.Join(missing, ", "))
	}
	return nil
}
