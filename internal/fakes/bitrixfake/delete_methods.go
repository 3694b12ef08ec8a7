package bitrixfake

import (
	"net/http"
	"time"
)

// The REST methods that delete, and crm.item.get, with the answers and errors of their pages in
// the docs (api-reference/crm/universal/crm-item-delete.md, crm-item-get.md,
// crm/deals/crm-deal-delete.md, tasks/tasks-task-delete.md, log/blogcomment/log-blogcomment-delete.md).
// log.blogpost.delete's page documents no answer: true and "No post found" are modelled on
// log.blogcomment.delete's.

func (p *Portal) initDeleteMethods() {
	crm := map[string]handler{
		"crm.item.get":                  p.crmItemGet,
		"crm.item.delete":               p.crmItemDelete,
		"crm.company.delete":            p.crmLegacyDelete(etCompany),
		"crm.contact.delete":            p.crmLegacyDelete(etContact),
		"crm.deal.delete":               p.crmLegacyDelete(etDeal),
		"crm.contact.company.items.get": p.contactCompanyItems,
		"crm.company.contact.items.get": p.companyContactItems,
	}
	for name, h := range crm {
		p.handlers[name] = p.crmGuard(h)
	}
	p.handlers["tasks.task.delete"] = p.taskDelete
	p.handlers["task.commentitem.delete"] = p.commentItemDelete
	p.handlers["log.blogpost.delete"] = p.blogPostDelete
	p.handlers["log.blogcomment.delete"] = p.blogCommentDelete
}

// crmEntity is the entity of an entityTypeId that deletion and get know.
func crmEntity(entityTypeID int) (string, bool) {
	e, ok := map[int]string{etCompany: DeleteCompanies, etContact: DeleteContacts, etDeal: DeleteDeals}[entityTypeID]
	return e, ok
}

// crmRow renders a live record of a company, contact or deal as crm.item.list does.
func (p *Portal) crmRow(entityTypeID, id int, original bool) object {
	switch entityTypeID {
	case etCompany:
		return p.companyRow(id, original)
	case etContact:
		return p.contactRow(id, original)
	}
	return p.dealRow(id, original)
}

// crmItemGet is crm.item.get for companies, contacts and deals: {"item": row}, or 400 NOT_FOUND.
func (p *Portal) crmItemGet(params map[string]any) answer {
	et, id := crmParams(params)
	if _, ok := crmEntity(et); !ok {
		if _, smart := p.smartType(et); !smart {
			return fail(http.StatusBadRequest, "NOT_FOUND", "Smart process not found")
		}
		return fail(http.StatusForbidden, "ACCESS_DENIED", "Access denied")
	}
	if indexOf(p.crmIDs(et), id) < 0 {
		return fail(http.StatusBadRequest, "NOT_FOUND", "Element not found")
	}
	orig, _ := param(params, "useOriginalUfNames")
	return answer{result: object{{"item", p.crmRow(et, id, strval(orig) == "Y")}}, cost: p.opts.CallCost}
}

// crmItemDelete is crm.item.delete: [] on success, 400 NOT_FOUND "Item not found" for a record
// the portal does not hold (deleted before, or never there). The webhook may not delete smart
// process items here: ACCESS_DENIED, the documented refusal.
func (p *Portal) crmItemDelete(params map[string]any) answer {
	et, id := crmParams(params)
	entity, ok := crmEntity(et)
	if !ok {
		if _, smart := p.smartType(et); !smart {
			return fail(http.StatusBadRequest, "NOT_FOUND", "Smart process not found")
		}
		return fail(http.StatusForbidden, "ACCESS_DENIED", "Access denied")
	}
	if !p.deleteCRM(entity, id) {
		return fail(http.StatusBadRequest, "NOT_FOUND", "Item not found")
	}
	return answer{result: []any{}, cost: p.opts.CallCost}
}

// crmLegacyDelete is crm.company/contact/deal.delete: true, or 400 with an empty code.
func (p *Portal) crmLegacyDelete(entityTypeID int) handler {
	entity, _ := crmEntity(entityTypeID)
	return func(params map[string]any) answer {
		v, _ := param(params, "id")
		id := intval(v)
		switch {
		case id <= 0:
			return fail(http.StatusBadRequest, "", "ID is not defined or invalid.")
		case !p.deleteCRM(entity, id):
			return fail(http.StatusBadRequest, "", "Not found")
		}
		return answer{result: true, cost: p.opts.CallCost}
	}
}

func (p *Portal) deleteCRM(entity string, id int) bool {
	switch entity {
	case DeleteCompanies:
		return removeID(&p.companies, id)
	case DeleteContacts:
		return removeID(&p.contacts, id)
	}
	return removeID(&p.deals, id)
}

func crmParams(params map[string]any) (entityTypeID, id int) {
	et, _ := param(params, "entityTypeId")
	v, _ := param(params, "id")
	return intval(et), intval(v)
}

// contactCompanyItems is crm.contact.company.items.get: the contact's companies in the portal's
// order (SORT), {COMPANY_ID, SORT, ROLE_ID, IS_PRIMARY} with integers, [] for none.
func (p *Portal) contactCompanyItems(params map[string]any) answer {
	id, refusal := bindingOwner(params, p.contacts)
	if refusal != nil {
		return *refusal
	}
	_, links := p.contact(id, true)
	rows := []object{}
	for _, l := range links {
		rows = append(rows, object{{"COMPANY_ID", l.company}, {"SORT", l.sort}, {"ROLE_ID", 0}, {"IS_PRIMARY", yn(l.primary)}})
	}
	return answer{result: rows, cost: p.opts.CallCost}
}

// companyContactItems is crm.company.contact.items.get: the live contacts linked to a company,
// {CONTACT_ID, SORT, ROLE_ID, IS_PRIMARY} by contact id, IS_PRIMARY when the company is the
// contact's primary one.
func (p *Portal) companyContactItems(params map[string]any) answer {
	id, refusal := bindingOwner(params, p.companies)
	if refusal != nil {
		return *refusal
	}
	rows := []object{}
	for _, c := range p.contacts {
		_, links := p.contact(c, true)
		for _, l := range links {
			if l.company == id {
				rows = append(rows, object{{"CONTACT_ID", c}, {"SORT", l.sort}, {"ROLE_ID", 0}, {"IS_PRIMARY", yn(l.primary)}})
			}
		}
	}
	return answer{result: rows, cost: p.opts.CallCost + time.Duration(len(p.contacts))*p.opts.CountCost}
}

// bindingOwner reads the id of the record whose links crm.*.items.get asks for, refusing one that
// is not among the live ids.
func bindingOwner(params map[string]any, live []int) (int, *answer) {
	v, _ := param(params, "id")
	id := intval(v)
	var refusal answer
	switch {
	case id <= 0:
		refusal = fail(http.StatusBadRequest, "", "The parameter 'ownerEntityID' is invalid or not defined.")
	case indexOf(live, id) < 0:
		refusal = fail(http.StatusBadRequest, "", "Not found")
	default:
		return id, nil
	}
	return 0, &refusal
}

// taskDelete is tasks.task.delete: {"task": true}; a task the webhook's user cannot see, or that
// is gone, is refused with the docs' 1048582.
func (p *Portal) taskDelete(params map[string]any) answer {
	v, ok := param(params, "taskId")
	if !ok {
		return fail(http.StatusBadRequest, "100", "CTaskItem All parameters in the constructor must have real class type")
	}
	if intval(v) <= 0 {
		return fail(http.StatusBadRequest, "0", "wrong task id")
	}
	if _, visible := p.visibleTask(intval(v)); !visible {
		return fail(http.StatusBadRequest, "1048582", "No access to delete the task")
	}
	p.deleteTask(intval(v))
	return answer{result: object{{"task", true}}, cost: p.opts.CallCost}
}

// commentItemDelete is task.commentitem.delete: [TASKID, ITEMID], positional or named, an
// old-card comment of a task the webhook's user sees; every refusal is the docs' #4.
func (p *Portal) commentItemDelete(params map[string]any) answer {
	t, refusal, ok := p.taskOf(params, true)
	if !ok {
		return refusal
	}
	item, has := params["1"]
	if !has {
		item, has = param(params, "ITEMID")
	}
	if !has {
		return fail(http.StatusBadRequest, "ERROR_CORE", "TASKS_ERROR_EXCEPTION_#256; Param #1 (itemId) expected by method "+
			"ctaskcommentitem::delete(), but not given.; 256/TE/WRONG_ARGUMENTS")
	}
	if id := intval(item); id/64 != t.id || !p.deleteTaskComment(id) {
		return fail(http.StatusBadRequest, "ERROR_CORE", "TASKS_ERROR_EXCEPTION_#4; Action is not allowed; 4/TE/ACTION_NOT_ALLOWED.<br>")
	}
	return answer{result: true, cost: p.opts.CallCost}
}

// blogPostDelete is log.blogpost.delete: POST_ID, a post the caller sees.
func (p *Portal) blogPostDelete(params map[string]any) answer {
	v, _ := param(params, "POST_ID")
	id := intval(v)
	if id <= 0 {
		return fail(http.StatusBadRequest, "", "Wrong post ID")
	}
	if ps, ok := p.feed.byID[id]; !ok || !p.postVisible(ps) {
		return fail(http.StatusBadRequest, "", "No post found")
	}
	p.deletePost(id)
	return answer{result: true, cost: p.opts.CallCost}
}

// blogCommentDelete is log.blogcomment.delete: COMMENT_ID (the blog comment id), by its author
// or an administrator.
func (p *Portal) blogCommentDelete(params map[string]any) answer {
	v, _ := param(params, "COMMENT_ID")
	id := intval(v)
	if id <= 0 {
		return fail(http.StatusBadRequest, "", "Wrong comment ID")
	}
	ps, ok := p.feed.byID[(id-postBlogCommentBase)/32]
	var author int
	if ok {
		for _, c := range ps.comments {
			if c.blogID == id {
				author = c.author
			}
		}
	}
	switch {
	case author == 0:
		return fail(http.StatusBadRequest, "", "No comment found")
	case author != p.caller() && !p.callerAdmin():
		return fail(http.StatusBadRequest, "", "No delete perms")
	}
	p.deletePostComment(id)
	return answer{result: true, cost: p.opts.CallCost}
}

// PortalIDs lists the live ids of an entity Delete knows, ascending, for tests.
func (p *Portal) PortalIDs(entity string) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch entity {
	case DeleteCompanies:
		return append([]int(nil), p.companies...)
	case DeleteContacts:
		return append([]int(nil), p.contacts...)
	case DeleteDeals:
		return append([]int(nil), p.deals...)
	case DeleteTasks:
		return append([]int(nil), p.tasks.ids...)
	case DeleteFeed:
		return append([]int(nil), p.feed.ids...)
	}
	return nil
}

// ContactCompanies returns a contact's company ids in the portal's order and its primary one,
// for tests.
func (p *Portal) ContactCompanies(id int) (companies []int, primary int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, links := p.contact(id, true)
	for _, l := range links {
		companies = append(companies, l.company)
		if l.primary {
			primary = l.company
		}
	}
	return companies, primary
}
