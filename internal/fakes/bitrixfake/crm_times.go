package bitrixfake

import (
	"strconv"
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

// itoaAny renders an id the way the classic lists do: a string.
func itoaAny(v any) any {
	if n, ok := v.(int); ok {
		return strconv.Itoa(n)
	}
	return v
}
