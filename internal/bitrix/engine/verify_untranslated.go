package engine

import "context"

// untranslatedValues lists, for every member of the family with an Untranslated hook, the values
// its imported records keep as the portal has them, by record: reading them a page at a time
// with what they refer to.
func (e *Engine) untranslatedValues(ctx context.Context, family []*Entity, r *VerifyReport) error {
	for _, m := range family {
		if m.Untranslated == nil {
			continue
		}
		err := e.store().eachImported(ctx, m.Name, func(recs []Record) error {
			rf, err := loadRefs(ctx, e.pool, m, recs)
			if err != nil {
				return err
			}
			for _, rec := range recs {
				fields, err := FieldsOf(rec.Payload)
				if err != nil {
					return err
				}
				for _, reason := range m.Untranslated(fields, rf) {
					r.UntranslatedCount++
					if len(r.Untranslated) < MaxListed {
						r.Untranslated = append(r.Untranslated, RecordIssue{Entity: m.Name, SourceID: rec.SourceID, Status: string(rec.Status), Reason: reason})
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
