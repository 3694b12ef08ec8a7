package bitrixfake

import (
	"fmt"
	"strconv"
	"time"
)

// Real portals answer the same values in other shapes than the documentation's tidy examples, by
// method, field and version (recorded answers: public SDK fixtures, integration logs, issue
// threads). With Options.RealShapes the portal answers users, contacts and tasks in those
// shapes, every value unchanged in meaning, so that a test can check the migration sends the
// target the same thing either way:
//
//   - users: empty fields left out instead of sent as "" (an empty birthday as {}, as
//     TIMESTAMP_X is when empty), ACTIVE as "Y"/"N" instead of a boolean, department ids as
//     strings, an empty multiple list field as false, date-only fields as the day's midnight UTC
//     written in the portal's offset ("2022-09-03T03:00:00+03:00" for 2022-09-03);
//   - contacts: ids and references as strings instead of numbers, secondName "" instead of
//     null, opened as a boolean, numbers of a double field as strings, date-only fields shifted
//     as users' are, an empty multiple field as false;
//   - tasks: mark and xmlId "" instead of null, empty dates left out, Y/N flags as booleans,
//     an empty file list as [] instead of false, numbers of custom fields as JSON numbers;
//   - posts: CATEGORY_ID null instead of "", CODE "" instead of null, HAS_COMMENT_IMAGES left
//     out, the Y/N flags as booleans.

// realUser rewrites a user.get row in the real shapes.
func (p *Portal) realUser(row object) object {
	out := make(object, 0, len(row))
	for _, f := range row {
		switch v := f.value.(type) {
		case string:
			switch {
			case v == "" && f.key == "PERSONAL_BIRTHDAY":
				f.value = object{}
			case v == "":
				continue // left out
			case f.key == "PERSONAL_BIRTHDAY" || f.key == "UF_EMPLOYMENT_DATE":
				f.value = p.shiftedDate(v)
			}
		case bool:
			f.value = yn(v)
		case []int:
			switch {
			case len(v) == 0 && f.key == "UF_USR_1724228142162":
				f.value = false
			case len(v) == 0:
				continue
			default:
				f.value = intStrings(v)
			}
		}
		out = append(out, f)
	}
	return out
}

// realContact rewrites a crm.item.list contact row in the real shapes.
func (p *Portal) realContact(row object) object {
	out := make(object, 0, len(row))
	for _, f := range row {
		switch v := f.value.(type) {
		case nil:
			f.value = ""
		case int:
			f.value = strconv.Itoa(v)
		case string:
			switch {
			case f.key == "opened":
				f.value = v == "Y"
			case f.key == "birthdate":
				f.value = p.shiftedDate(v)
			}
		case []any:
			if len(v) == 0 {
				f.value = false
				break
			}
			list := make([]any, len(v))
			for i, e := range v {
				switch e := e.(type) {
				case string:
					if len(e) == len("2006-01-02") && e[4] == '-' {
						list[i] = p.shiftedDate(e)
					} else {
						list[i] = e
					}
				case int:
					list[i] = strconv.Itoa(e)
				default: // a double field's numbers, written as strings
					list[i] = fmt.Sprintf("%s", e)
				}
			}
			f.value = list
		}
		out = append(out, f)
	}
	return out
}

// realTask rewrites a tasks.task.list row in the real shapes.
func (p *Portal) realTask(row object) object {
	out := make(object, 0, len(row))
	for _, f := range row {
		switch f.key {
		case "mark", "xmlId":
			if f.value == nil {
				f.value = ""
			}
		case "closedDate", "deadline", "startDatePlan", "endDatePlan", "dateStart", "timeSpentInLogs":
			if f.value == nil {
				continue
			}
		case "multitask", "replicate", "allowChangeDeadline", "allowTimeTracking", "taskControl", "addInReport",
			"matchWorkTime", "descriptionInBbcode":
			f.value = f.value == "Y"
		case "ufTaskWebdavFiles":
			if f.value == false {
				f.value = []any{}
			}
		case "UF_TASK_PROJECT_BUDGET", "UF_TASK_LEGAL_REVIEW_REQUIRED":
			if s, ok := f.value.(string); ok {
				f.value = jsonNumber(s)
			}
		}
		out = append(out, f)
	}
	return out
}

// shiftedDate is how a real portal answers a date-only field: the day's midnight UTC written in
// the portal's offset. s is the tidy value, the day alone or its local midnight.
func (p *Portal) shiftedDate(s string) string {
	day, err := time.Parse("2006-01-02", s[:min(len(s), 10)])
	if err != nil {
		return s
	}
	return p.isoDate(day) // midnight UTC, in the portal's zone
}

func intStrings(v []int) []any {
	out := make([]any, len(v))
	for i, n := range v {
		out[i] = strconv.Itoa(n)
	}
	return out
}

// jsonNumber is a number written as the digits it has.
type jsonNumber string

// MarshalJSON writes the digits as a JSON number.
func (n jsonNumber) MarshalJSON() ([]byte, error) { return []byte(n), nil }

// realPost rewrites a log.blogpost.get row in the real shapes.
func realPost(row object) object {
	out := make(object, 0, len(row))
	for _, f := range row {
		switch f.key {
		case "CATEGORY_ID":
			if f.value == "" {
				f.value = nil
			}
		case "CODE":
			if f.value == nil {
				f.value = ""
			}
		case "HAS_COMMENT_IMAGES":
			continue
		case "MICRO", "ENABLE_COMMENTS", "HAS_SOCNET_ALL", "HAS_TAGS", "HAS_IMAGES", "HAS_PROPS":
			f.value = f.value == "Y"
		}
		out = append(out, f)
	}
	return out
}
