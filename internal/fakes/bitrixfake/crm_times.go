package bitrixfake

import (
	"time"
)

// crmTimes completes a CRM row as generated with its activity fields and applies what changed on
// the record since (mutate.go). lastActivityTime is the newest event of the record's timeline:
// its creation or its newest timeline comment (a deleted comment does not turn it back), by the
// user who made it; the documented sample (crm.item.add) has lastActivityBy and lastActivityTime
// right after movedBy and movedTime, which follow updatedTime.
func (p *Portal) crmTimes(et, id int, row object) object {
	createdS, _ := row.get("createdTime")
	created, _ := rowInstant(createdS, nil)
	by, _ := row.get("createdBy")
	activity, activityBy := created, by
	if n := p.generatedComments(et, id); n > 0 {
		if last := p.past(generatedCommentTime(p.epoch(), id, n-1)); last.After(activity) {
			activity = last
		}
	}
	if ch := p.mut.crm[et][id]; ch != nil {
		if !ch.created.IsZero() {
			row.set("createdTime", p.isoDate(ch.created))
			row.set("createdBy", ch.updatedBy)
			if _, has := row.get("movedTime"); has {
				row.set("movedTime", p.isoDate(ch.created))
				row.set("begindate", p.isoDate(ch.created.Truncate(24*time.Hour)))
				row.set("closedate", p.isoDate(ch.created.AddDate(0, 1, 0).Truncate(24*time.Hour)))
			}
		}
		if !ch.updated.IsZero() {
			row.set("updatedTime", p.isoDate(ch.updated))
			row.set("updatedBy", ch.updatedBy)
		}
		if ch.activity.After(activity) {
			activity, activityBy = ch.activity, ch.activityBy
		}
		if ch.edits > 0 {
			key := "title"
			if et == etContact {
				key = "name"
			}
			v, _ := row.get(key)
			row.set(key, strval(v)+editMark(ch.edits))
		}
	}
	at := len(row)
	for i, f := range row {
		if f.key == "updatedTime" || f.key == "movedTime" {
			at = i + 1
		}
	}
	tail := append(object{{"lastActivityBy", activityBy}, {"lastActivityTime", p.isoDate(activity)}}, row[at:]...)
	return append(row[:at:at], tail...)
}

// crmDateFields are the date fields of crm.item.list rows: filters on them compare instants.
var crmDateFields = map[string]bool{"createdTime": true, "updatedTime": true, "lastActivityTime": true,
	"movedTime": true, "begindate": true, "closedate": true, "birthdate": true}

// crmQuickFields are the fields crmQuickTimes renders without building the whole row.
var crmQuickFields = map[string]bool{"createdTime": true, "updatedTime": true, "lastActivityTime": true}

// crmQuickTimes renders a record's createdTime, updatedTime and lastActivityTime as its row has
// them, without building the row: they are the first values drawn from the record's generator
// (crmDates), then what crmTimes applies. A filter on modification times looks at every record
// of a range; the rows are built only for the ones it selects.
func (p *Portal) crmQuickTimes(et, id int) object {
	var r = p.rng(kindSmart, id*10000+et)
	switch et {
	case etCompany:
		r = p.rng(kindCompany, id)
	case etContact:
		r = p.rng(kindContact, id)
	case etDeal:
		r = p.rng(kindDeal, id)
	}
	created, updated := p.crmDates(r)
	activity := created
	if n := p.generatedComments(et, id); n > 0 {
		if last := p.past(generatedCommentTime(p.epoch(), id, n-1)); last.After(activity) {
			activity = last
		}
	}
	if ch := p.mut.crm[et][id]; ch != nil {
		if !ch.created.IsZero() {
			created = ch.created
		}
		if !ch.updated.IsZero() {
			updated = ch.updated
		}
		if ch.activity.After(activity) {
			activity = ch.activity
		}
	}
	return object{{"createdTime", p.isoDate(created)}, {"updatedTime", p.isoDate(updated)}, {"lastActivityTime", p.isoDate(activity)}}
}

// crmPrefilter narrows the ids a crm.item.list query looks at to those whose quick times
// (crmQuickTimes) meet the query's conditions on them, and says how many it looked at; ok is
// false when the query has no such condition. Every
// condition must hold for a row, so the rows built afterwards are tested on all of them again.
func (p *Portal) crmPrefilter(et int, ids []int, conds []cond) (out []int, scanned int, ok bool) {
	var quick []cond
	for _, c := range conds {
		if quickCond(c) {
			quick = append(quick, c)
		}
	}
	if len(quick) == 0 {
		return nil, 0, false
	}
	lo, hi, _ := idRange(ids, conds)
	out = []int{}
	for _, id := range ids[lo:hi] {
		if matchesAll(p.crmQuickTimes(et, id), quick) {
			out = append(out, id)
		}
	}
	return out, hi - lo, true
}

// quickCond reports whether a condition looks only at crmQuickFields: one on such a field, or a
// nested filter of such conditions.
func quickCond(c cond) bool {
	if c.op != opGroup {
		return crmQuickFields[c.field]
	}
	for _, s := range c.sub {
		if !quickCond(s) {
			return false
		}
	}
	return len(c.sub) > 0
}
