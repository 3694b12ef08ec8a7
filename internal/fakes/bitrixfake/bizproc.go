package bitrixfake

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Workflows (bizproc, research/bitrix.md §5.6): templates with their whole activity tree,
// parameters, variables and constants, whose user references are "user_<id>" strings (one of
// them names a user the portal does not have); running instances with non-numeric string ids,
// paged by start only; and workflow tasks, including one of a workflow that completed (the
// cloud keeps those a day).

// templateKind is what a template belongs to: its module, document class and type.
type templateKind struct {
	module, entity, docType, docPrefix string
}

var templateKinds = []templateKind{
	{"crm", "CCrmDocumentDeal", "DEAL", "DEAL_"},
	{"crm", "CCrmDocumentCompany", "COMPANY", "COMPANY_"},
	{"crm", `Bitrix\Crm\Integration\BizProc\Document\Dynamic`, "DYNAMIC_1038", "DYNAMIC_1038_"},
	{"lists", "BizprocDocument", "iblock_171", ""},
	{"crm", "CCrmDocumentContact", "CONTACT", "CONTACT_"},
}

// missingUser is the user id a template names that the portal does not have (a user deleted
// from the portal long ago, still written into the template).
const missingUser = 999999

func (p *Portal) initBizproc() {
	p.templates = generateIDs(p.opts.Workflows, 4)
	for name, h := range map[string]handler{
		"bizproc.workflow.template.list": p.templateList,
		"bizproc.workflow.instances":     p.instanceList,
		"bizproc.workflow.instance.list": p.instanceList,
		"bizproc.task.list":              p.bizprocTaskList,
	} {
		p.handlers[name] = h
	}
}

func (p *Portal) templateKind(id int) templateKind {
	return templateKinds[indexOf(p.templates, id)%len(templateKinds)]
}

// templateRow is a template with every field bizproc.workflow.template.list can select.
func (p *Portal) templateRow(id int) object {
	k := p.templateKind(id)
	r := p.rng(kindSmart+1, id)
	u := func() string { return "user_" + strconv.Itoa(p.pickUser(r)) }
	responsible := u()
	if indexOf(p.templates, id) == 1 {
		responsible = "user_" + strconv.Itoa(missingUser)
	}
	tree := []any{object{
		{"Type", "SequentialWorkflowActivity"}, {"Name", "Template"},
		{"Properties", object{{"Title", "Последовательный бизнес-процесс"}, {"Permission", []any{}}}},
		{"Children", []any{
			object{{"Type", "ApproveActivity"}, {"Name", fmt.Sprintf("A%d_1", id)},
				{"Properties", object{{"Title", "Утверждение"}, {"Users", []any{u(), u(), "author"}}, {"ApproveType", "any"},
					{"Name", "Согласуйте документ"}, {"Description", "{=Document:TITLE}"}}},
				{"Children", []any{
					object{{"Type", "SequenceActivity"}, {"Name", fmt.Sprintf("A%d_2", id)}, {"Properties", object{{"Title", "Да"}}},
						{"Children", []any{object{{"Type", "SetFieldActivity"}, {"Name", fmt.Sprintf("A%d_3", id)},
							{"Properties", object{{"FieldValue", object{{"ASSIGNED_BY_ID", u()}}}, {"Title", "Изменение документа"}}}}}}},
				}}},
			object{{"Type", "Task2Activity"}, {"Name", fmt.Sprintf("A%d_4", id)},
				{"Properties", object{{"Title", "Задача"}, {"Fields", object{{"RESPONSIBLE_ID", responsible}, {"TITLE", "Проверить"}}}}}},
		}},
	}}
	modified := p.epoch().AddDate(9, 0, id)
	return object{
		{"ID", strconv.Itoa(id)}, {"MODULE_ID", k.module}, {"ENTITY", k.entity},
		{"DOCUMENT_TYPE", []any{k.module, k.entity, k.docType}}, {"AUTO_EXECUTE", strconv.Itoa(id % 2)},
		{"NAME", fmt.Sprintf("Согласование %d", id)}, {"TEMPLATE", tree},
		{"PARAMETERS", object{{"Approver", object{{"Name", "Согласующий"}, {"Description", ""}, {"Type", "user"},
			{"Required", "1"}, {"Multiple", "0"}, {"Default", u()}}}}},
		{"VARIABLES", object{{"Sum", object{{"Name", "Сумма"}, {"Description", ""}, {"Type", "double"}, {"Required", "0"},
			{"Multiple", "0"}, {"Default", "0"}}}}},
		{"CONSTANTS", object{{"Head", object{{"Name", "Руководитель"}, {"Description", ""}, {"Type", "user"}, {"Required", "0"},
			{"Multiple", "1"}, {"Default", []any{u()}}}}}},
		{"MODIFIED", p.isoDate(modified)}, {"IS_MODIFIED", "N"}, {"USER_ID", strconv.Itoa(p.pickUser(r))}, {"SYSTEM_CODE", ""},
	}
}

// bizprocGuard answers a webhook without workflow rights as each method's page shows.
func (p *Portal) bizprocDenied(status int) (answer, bool) {
	if p.opts.DenyBizproc {
		return fail(status, "ACCESS_DENIED", "Access denied!"), true
	}
	return answer{}, false
}

// selectOf applies a bizproc SELECT to a row; ID is always kept, and nothing selected means
// the method's defaults.
func selectOf(row object, params map[string]any, defaults []string) object {
	sel, _ := param(params, "SELECT")
	want := map[string]bool{"ID": true}
	for _, s := range listOf(sel) {
		want[strings.ToUpper(strval(s))] = true
	}
	if len(want) == 1 {
		for _, d := range defaults {
			want[d] = true
		}
	}
	out := make(object, 0, len(row))
	for _, f := range row {
		if want[f.key] {
			out = append(out, f)
		}
	}
	return out
}

// orderByID reads a bizproc ORDER: only ID (or STARTED for instances, whose ids sort the same
// way) ascending or descending.
func orderByID(params map[string]any) (desc bool) {
	o, _ := param(params, "ORDER")
	if m, ok := o.(map[string]any); ok {
		for _, dir := range m {
			desc = strings.EqualFold(strval(dir), "DESC")
		}
	}
	return desc
}

func (p *Portal) templateList(params map[string]any) answer {
	if a, denied := p.bizprocDenied(http.StatusBadRequest); denied {
		return a
	}
	ids := slices.Clone(p.templates)
	if orderByID(params) {
		slices.Reverse(ids)
	}
	rows := make([]object, 0, len(ids))
	for _, id := range ids {
		rows = append(rows, selectOf(p.templateRow(id), params, nil))
	}
	page, total, next := pageOf(rows, startParam(params))
	return answer{result: page, total: &total, next: next, cost: p.opts.CallCost}
}

// instance is a running workflow.
type instance struct {
	id, document string
	template     int
	kind         templateKind
	started      time.Time
	by           int
}

// instances are the running workflows: two for every CRM template, on a record of its type.
func (p *Portal) instances() []instance {
	var out []instance
	for i, tid := range p.templates {
		k := p.templateKind(tid)
		if k.module != "crm" {
			continue
		}
		// The documents are drawn from the records as generated; a workflow whose document was
		// deleted ends with it.
		var docs, live []int
		switch k.docType {
		case "DEAL":
			docs, live = p.genDeals, p.deals
		case "COMPANY":
			docs, live = p.genCompanies, p.companies
		case "CONTACT":
			docs, live = p.genContacts, p.contacts
		default:
			docs, live = p.smartItems, p.smartItems
		}
		if len(docs) == 0 {
			continue
		}
		r := p.rng(kindSmart+2, tid)
		for j := range 2 {
			started := p.epoch().AddDate(10, 0, i*3+j)
			doc, by := docs[r.IntN(len(docs))], p.pickUser(r)
			if indexOf(live, doc) < 0 {
				continue
			}
			out = append(out, instance{
				id:       fmt.Sprintf("%013x.%08d", started.Unix()*16+int64(j), 10000000+tid*10+j),
				document: k.docPrefix + strconv.Itoa(doc), template: tid, kind: k,
				started: started, by: by,
			})
		}
	}
	slices.SortFunc(out, func(a, b instance) int { return strings.Compare(a.id, b.id) })
	return out
}

func (p *Portal) instanceRow(in instance) object {
	return object{
		{"ID", in.id}, {"MODIFIED", p.isoDate(in.started.Add(time.Hour))}, {"OWNED_UNTIL", nil}, {"MODULE_ID", in.kind.module},
		{"ENTITY", in.kind.entity}, {"DOCUMENT_ID", in.document}, {"STARTED", p.isoDate(in.started)},
		{"STARTED_BY", strconv.Itoa(in.by)}, {"TEMPLATE_ID", strconv.Itoa(in.template)},
	}
}

func (p *Portal) instanceList(params map[string]any) answer {
	if a, denied := p.bizprocDenied(http.StatusForbidden); denied {
		return a
	}
	ins := p.instances()
	if orderByID(params) {
		slices.Reverse(ins)
	}
	rows := make([]object, 0, len(ins))
	for _, in := range ins {
		rows = append(rows, selectOf(p.instanceRow(in), params, []string{"MODIFIED", "OWNED_UNTIL"}))
	}
	page, total, next := pageOf(rows, startParam(params))
	return answer{result: page, total: &total, next: next, cost: p.opts.CallCost}
}

// taskRows are the workflow tasks: one for every running workflow, and one of a workflow that
// completed (kept a day on the cloud).
func (p *Portal) taskRows() []object {
	var rows []object
	add := func(n int, wf, doc string, tid int, k templateKind, status string, started time.Time, user int) {
		rows = append(rows, object{
			{"ENTITY", k.entity}, {"DOCUMENT_ID", doc}, {"ID", strconv.Itoa(n)}, {"WORKFLOW_ID", wf},
			{"DOCUMENT_NAME", "Документ " + doc}, {"DESCRIPTION", ""}, {"NAME", "Согласуйте документ"},
			{"MODIFIED", p.isoDate(started.Add(2 * time.Hour))}, {"WORKFLOW_STARTED", p.isoDate(started)},
			{"WORKFLOW_STARTED_BY", strconv.Itoa(user)}, {"OVERDUE_DATE", nil}, {"WORKFLOW_TEMPLATE_ID", strconv.Itoa(tid)},
			{"WORKFLOW_TEMPLATE_NAME", fmt.Sprintf("Согласование %d", tid)}, {"WORKFLOW_STATE", "Утверждение"},
			{"STATUS", status}, {"USER_ID", strconv.Itoa(user)}, {"USER_STATUS", status}, {"MODULE_ID", k.module},
			{"ACTIVITY", "ApproveActivity"}, {"ACTIVITY_NAME", fmt.Sprintf("A%d_1", tid)},
			{"PARAMETERS", object{{"ShowComment", "Y"}, {"CommentRequired", "N"}}},
			{"DOCUMENT_URL", "/crm/deal/details/" + strings.TrimPrefix(doc, k.docPrefix) + "/"},
		})
	}
	ins := p.instances()
	for i, in := range ins {
		add(1000+i*2, in.id, in.document, in.template, in.kind, "0", in.started, in.by)
	}
	if len(ins) > 0 {
		in := ins[0]
		add(999, "5f0c1d2e3a4b56.00000001", in.document, in.template, in.kind, "1", in.started.AddDate(0, 0, -1), in.by)
	}
	slices.SortFunc(rows, func(a, b object) int {
		x, _ := a.get("ID")
		y, _ := b.get("ID")
		return intval(x) - intval(y)
	})
	return rows
}

func (p *Portal) bizprocTaskList(params map[string]any) answer {
	if a, denied := p.bizprocDenied(http.StatusBadRequest); denied {
		return a
	}
	rows := p.taskRows()
	if orderByID(params) {
		slices.Reverse(rows)
	}
	for i := range rows {
		rows[i] = selectOf(rows[i], params, []string{"ENTITY", "DOCUMENT_ID", "WORKFLOW_ID", "DOCUMENT_NAME", "NAME", "DOCUMENT_URL"})
	}
	start := startParam(params)
	if s, ok := param(params, "START"); ok && start == 0 {
		start = intval(s)
	}
	page, total, next := pageOf(rows, start)
	return answer{result: page, total: &total, next: next, cost: p.opts.CallCost}
}

// WorkflowCounts says how many templates, running workflows and tasks the portal has.
func (p *Portal) WorkflowCounts() (templates, instances, tasks int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.templates), len(p.instances()), len(p.taskRows())
}

// MissingUser is the user id a workflow template names that the portal has not.
func MissingUser() int { return missingUser }
