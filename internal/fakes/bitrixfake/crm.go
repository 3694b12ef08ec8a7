package bitrixfake

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	embedded "github.com/ingest-dev/ingest/internal/fakes/fixtures"
)

// The CRM of the fake portal (DOCS api-reference/crm/universal, research/bitrix.md §5.7):
// companies (entityTypeId 4), contacts (3), deals (2) and two smart processes, each with its
// funnels (categories) and stages, custom fields of several types, multi-fields, deals linked to
// several contacts and one deal linked to a company that was deleted. Rows are generated from
// the seed and the record's ID, as users are, so a portal of 100,000 deals costs no memory
// beyond its ID lists.

const (
	kindCompany uint64 = kindMessage + 1 + iota
	kindContact
	kindDeal
	kindSmart
)

// Entity type ids of the CRM (DOCS api-reference/crm/data-types.md).
const (
	etDeal    = 2
	etContact = 3
	etCompany = 4
)

var companyUserfieldsSample = embedded.ReadFile("bitrix/crm.company.userfield.list.json")

var contactUserfieldsSample = embedded.ReadFile("bitrix/crm.contact.userfield.list.json")

var dealUserfieldsSample = embedded.ReadFile("bitrix/crm.deal.userfield.list.json")

// smartType is a smart process: its type id and entityTypeId differ, as on a real portal.
type smartType struct {
	id, entityTypeID int
	title            string
	categories       []int // the first is the default one
	stages           bool
}

// smartTypes are the portal's smart processes (when it has smart items at all). The second
// has categories disabled (one default funnel) and a custom field whose name is exactly 50
// characters long: on a target whose type id is longer it must be renamed.
var smartTypes = []smartType{
	{id: 7, entityTypeID: 1038, title: "Поставки", categories: []int{21, 22}, stages: true},
	{id: 9, entityTypeID: 1042, title: "Рекламации", categories: []int{25}, stages: true},
}

// longSmartField is the 50-character custom field of the second smart process.
const longSmartField = "UF_CRM_9_CLAIM_RESOLUTION_RESPONSIBLE_DEPARTMENT_1"

// crmCategory is a funnel of an entity type.
type crmCategory struct {
	id        int
	name      string
	isDefault bool
}

// dealCategories are the deals' funnels: the default one (id 0) and two more, one id having
// been deleted in between.
var dealCategories = []crmCategory{{0, "Общая", true}, {1, "Оптовые продажи", false}, {3, "Тендеры", false}}

// categoriesOf returns the funnels of an entity type, or false for a type the portal does not
// have.
func (p *Portal) categoriesOf(entityTypeID int) ([]crmCategory, bool) {
	switch entityTypeID {
	case etDeal:
		return dealCategories, true
	case etCompany:
		return []crmCategory{{4, "Компании", true}}, true
	case etContact:
		return []crmCategory{{5, "Контакты", true}}, true
	}
	if t, ok := p.smartType(entityTypeID); ok {
		var out []crmCategory
		for i, id := range t.categories {
			name := "Общая"
			if i > 0 {
				name = fmt.Sprintf("Направление %d", id)
			}
			out = append(out, crmCategory{id, name, i == 0})
		}
		return out, true
	}
	return nil, false
}

func (p *Portal) smartType(entityTypeID int) (smartType, bool) {
	if p.opts.SmartItems <= 0 {
		return smartType{}, false
	}
	for _, t := range smartTypes {
		if t.entityTypeID == entityTypeID {
			return t, true
		}
	}
	return smartType{}, false
}

// stageEntity is the crm.status.list ENTITY_ID of a funnel's stages, and the prefix of their
// STATUS_IDs; ok is false for types without stages.
func stageEntity(entityTypeID, categoryID int) (entity, prefix string, ok bool) {
	switch {
	case entityTypeID == etDeal && categoryID == 0:
		return "DEAL_STAGE", "", true
	case entityTypeID == etDeal:
		return fmt.Sprintf("DEAL_STAGE_%d", categoryID), fmt.Sprintf("C%d:", categoryID), true
	case entityTypeID >= 1000:
		return fmt.Sprintf("DYNAMIC_%d_STAGE_%d", entityTypeID, categoryID), fmt.Sprintf("DT%d_%d:", entityTypeID, categoryID), true
	}
	return "", "", false
}

// stageCodes are a funnel's stages: code, name, semantics (process, success, failure).
func stageCodes(entityTypeID int) [][3]string {
	if entityTypeID == etDeal {
		return [][3]string{{"NEW", "Новая", "process"}, {"PREPARATION", "Подготовка документов", "process"},
			{"EXECUTING", "В работе", "process"}, {"WON", "Сделка успешна", "success"}, {"LOSE", "Сделка провалена", "failure"}}
	}
	return [][3]string{{"NEW", "Начало", "process"}, {"PREPARATION", "Подготовка", "process"},
		{"SUCCESS", "Успех", "success"}, {"FAIL", "Провал", "failure"}}
}

// stageRows renders the crm.status.list rows of the stages with the given ENTITY_ID.
func (p *Portal) stageRows(entityID string) []object {
	var rows []object
	for _, et := range append([]int{etDeal}, p.smartTypeIDs()...) {
		cats, _ := p.categoriesOf(et)
		for ci, c := range cats {
			ent, prefix, ok := stageEntity(et, c.id)
			if !ok || ent != entityID {
				continue
			}
			for si, s := range stageCodes(et) {
				semantics := any(nil)
				switch s[2] {
				case "success":
					semantics = "S"
				case "failure":
					semantics = "F"
				}
				var category any
				if c.id != 0 || et != etDeal {
					category = strconv.Itoa(c.id)
				}
				color := []string{"#39A8EF", "#2FC6F6", "#55D0E0", "#7BD500", "#FF5752"}[si%5]
				rows = append(rows, object{
					{"ID", strconv.Itoa(100 + et*100 + ci*10 + si)}, {"ENTITY_ID", ent}, {"STATUS_ID", prefix + s[0]},
					{"NAME", s[1]}, {"NAME_INIT", s[1]}, {"SORT", strconv.Itoa(10 * (si + 1))},
					{"SYSTEM", map[bool]string{true: "Y", false: "N"}[si == 0 || s[2] != "process"]},
					{"CATEGORY_ID", category}, {"COLOR", color}, {"SEMANTICS", semantics},
					{"EXTRA", object{{"SEMANTICS", s[2]}, {"COLOR", color}}},
				})
			}
		}
	}
	return rows
}

func (p *Portal) smartTypeIDs() []int {
	var out []int
	if p.opts.SmartItems > 0 {
		for _, t := range smartTypes {
			out = append(out, t.entityTypeID)
		}
	}
	return out
}

// crmIDs returns the live ids of an entity type, ascending.
func (p *Portal) crmIDs(entityTypeID int) []int {
	switch entityTypeID {
	case etCompany:
		return p.companies
	case etContact:
		return p.contacts
	case etDeal:
		return p.deals
	}
	if _, ok := p.smartType(entityTypeID); ok {
		return p.smartItems
	}
	return nil
}

// initCRM generates the CRM's id lists. The third company is deleted: the second deal still
// refers to it, as a deal does on a real portal after its company went to the recycle bin.
func (p *Portal) initCRM() {
	p.companies = generateIDs(p.opts.Companies, 7)
	if len(p.companies) > 3 {
		p.deletedCompany = p.companies[2]
		p.companies = append(p.companies[:2:2], p.companies[3:]...)
	}
	p.contacts = generateIDs(p.opts.Contacts, 9)
	p.deals = generateIDs(p.opts.Deals, 11)
	p.genCompanies, p.genContacts, p.genDeals = slices.Clone(p.companies), slices.Clone(p.contacts), slices.Clone(p.deals)
	p.smartItems = generateIDs(p.opts.SmartItems, 5)
	for _, raw := range [][]byte{companyUserfieldsSample, contactUserfieldsSample, dealUserfieldsSample} {
		var uf struct{ Result []json.RawMessage }
		if err := json.Unmarshal(raw, &uf); err != nil {
			panic(fmt.Sprintf("bitrixfake: embedded CRM userfield sample: %v", err))
		}
		p.crmUserfields = append(p.crmUserfields, uf.Result)
	}
}

// pickUser returns one of the portal's users for a CRM field.
func (p *Portal) pickUser(r *rand.Rand) int {
	if len(p.allUsers) == 0 {
		return 1
	}
	return p.allUsers[r.IntN(len(p.allUsers))]
}

// ufName renders a custom field's name as crm.item.list does: as is with
// useOriginalUfNames=Y, else camelCase (UF_CRM_7_COLOR -> ufCrm7Color).
func ufName(name string, original bool) string {
	if original {
		return name
	}
	parts := strings.Split(strings.ToLower(name), "_")
	out := parts[0]
	for _, part := range parts[1:] {
		if part != "" {
			out += strings.ToUpper(part[:1]) + part[1:]
		}
	}
	return out
}

// money is an amount as the portal's JSON writes it: a number, never rounded through a float
// on its way (the fake keeps the exact digits).
func money(r *rand.Rand) json.RawMessage {
	return json.RawMessage(fmt.Sprintf("%d.%02d", 1000+r.IntN(5_000_000), r.IntN(100)))
}

var currencies = []string{"RUB", "RUB", "RUB", "USD", "EUR"}

// multiFields renders the fm container of a client: phones, e-mails, a site, a messenger.
func multiFields(r *rand.Rand, id int, withSite bool) []object {
	fm := []object{
		{{"id", id*10 + 1}, {"typeId", "PHONE"}, {"valueType", "WORK"}, {"value", fmt.Sprintf("+7 495 %03d-%02d-%02d", r.IntN(1000), r.IntN(100), r.IntN(100))}},
		{{"id", id*10 + 2}, {"typeId", "EMAIL"}, {"valueType", "WORK"}, {"value", fmt.Sprintf("info%d@example.ru", id)}},
	}
	if r.IntN(2) == 0 {
		fm = append(fm, object{{"id", id*10 + 3}, {"typeId", "PHONE"}, {"valueType", "MOBILE"}, {"value", fmt.Sprintf("+7 9%02d %03d-%02d-%02d", r.IntN(100), r.IntN(1000), r.IntN(100), r.IntN(100))}})
	}
	if withSite {
		fm = append(fm, object{{"id", id*10 + 4}, {"typeId", "WEB"}, {"valueType", "WORK"}, {"value", fmt.Sprintf("https://company%d.example.ru", id)}},
			object{{"id", id*10 + 5}, {"typeId", "IM"}, {"valueType", "TELEGRAM"}, {"value", fmt.Sprintf("@company%d", id)}})
	}
	return fm
}

// crmDates renders the created/updated pair of a record.
func (p *Portal) crmDates(r *rand.Rand) (created, updated time.Time) {
	created = between(r, p.epoch().AddDate(5, 0, 0), 4*365*24*time.Hour)
	return p.past(created), p.past(between(r, created, 200*24*time.Hour))
}

var companyWords = []string{"Ромашка", "Вектор", "Альфа", "Гранит", "Север", "Техно", "Орион", "Меридиан", "Сфера", "Импульс"}

// companyRow is a company as crm.item.list returns it with select ['*'].
func (p *Portal) companyRow(id int, original bool) object {
	r := p.rng(kindCompany, id)
	created, updated := p.crmDates(r)
	enum := []any{}
	for _, opt := range []int{3157, 3159, 3161, 3163, 3181} { // LIST ids of UF_CRM_1724077760
		if r.IntN(4) == 0 {
			enum = append(enum, opt)
		}
	}
	return p.crmTimes(etCompany, id, object{
		{"id", id}, {"title", fmt.Sprintf("ООО «%s-%d»", pick(r, companyWords), id)},
		{"companyTypeId", pick(r, []string{"CUSTOMER", "PARTNER", "SUPPLIER"})}, {"industry", pick(r, []string{"IT", "MANUFACTURING", "BANKING"})},
		{"employees", "EMPLOYEES_2"}, {"revenue", money(r)}, {"currencyId", pick(r, currencies)},
		{"categoryId", 4}, {"isMyCompany", "N"}, {"opened", "Y"},
		{"assignedById", p.pickUser(r)}, {"createdBy", p.pickUser(r)}, {"updatedBy", p.pickUser(r)},
		{"createdTime", p.isoDate(created)}, {"updatedTime", p.isoDate(updated)},
		{"fm", multiFields(r, id, true)},
		{ufName("UF_CRM_1724077760", original), enum},
		{ufName("UF_CRM_HELLO_WORLD", original), []any{fmt.Sprintf("Привет от компании %d", id)}},
		{ufName("UF_CRM_1713790573", original), []any{"IT"}},
		{ufName("UF_CRM_1722578010", original), []any{}},
	})
}

// contactRow is a contact as crm.item.list returns it: companyId is its primary company, and
// no field lists the others (the docs' user notes: COMPANY_IDS comes from no list or get; only
// crm.contact.company.items.get tells them).
func (p *Portal) contactRow(id int, original bool) object {
	row, _ := p.contact(id, original)
	return row
}

// contact generates a contact's row and its company links, in the portal's order.
func (p *Portal) contact(id int, original bool) (object, []companyLink) {
	r := p.rng(kindContact, id)
	created, updated := p.crmDates(r)
	first, last := pick(r, maleNames), pick(r, lastNames)
	primary, second := 0, 0
	if n := len(p.genCompanies); n > 0 && r.IntN(5) > 0 {
		primary = p.genCompanies[r.IntN(n)]
		if r.IntN(4) == 0 {
			second = p.genCompanies[r.IntN(n)]
		}
	}
	birth := time.Date(1960+r.IntN(40), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, p.opts.Location)
	return p.crmTimes(etContact, id, object{
		{"id", id}, {"name", first.ru}, {"lastName", last.ru}, {"secondName", nil}, {"honorific", "HNR_RU_1"},
		{"birthdate", p.isoDate(birth)}, {"typeId", "CLIENT"}, {"sourceId", "WEB"}, {"post", pick(r, positions)},
		{"categoryId", 5}, {"companyId", primary}, {"opened", "Y"},
		{"assignedById", p.pickUser(r)}, {"createdBy", p.pickUser(r)}, {"updatedBy", p.pickUser(r)},
		{"createdTime", p.isoDate(created)}, {"updatedTime", p.isoDate(updated)},
		{"fm", multiFields(r, 100000+id, false)},
		{ufName("UF_CRM_1724412713", original), []any{json.RawMessage(fmt.Sprintf("%d.5", r.IntN(1000)))}},
		{ufName("UF_CRM_1724412764", original), []any{fmt.Sprintf("2024-0%d-1%d", 1+r.IntN(9), r.IntN(10))}},
		{ufName("UF_CRM_1724412805", original), []any{p.pickUser(r)}},
		{ufName("UF_CRM_1724412914", original), []any{}},
	}), p.companyLinks(id, primary, second)
}

// companyLink is one company of a contact, as crm.contact.company.items.get answers it.
type companyLink struct {
	company, sort int
	primary       bool
}

// companyLinks are a contact's companies (many to many): the primary one, a second for a
// quarter of them, one or two more for some, and for the second contact the company that was
// deleted. The portal orders them by SORT, and the primary one is not always first.
func (p *Portal) companyLinks(id, primary, second int) []companyLink {
	if primary == 0 {
		return nil
	}
	r := p.rng(kindSmart+4, id)
	ids := []int{primary}
	if second != 0 && second != primary {
		ids = append(ids, second)
	}
	if n := len(p.genCompanies); r.IntN(6) == 0 {
		for range 1 + r.IntN(2) {
			if c := p.genCompanies[r.IntN(n)]; !slices.Contains(ids, c) {
				ids = append(ids, c)
			}
		}
	}
	if len(p.genContacts) > 1 && id == p.genContacts[1] && p.deletedCompany != 0 {
		ids = append(ids, p.deletedCompany)
	}
	slot := r.IntN(len(ids))
	ids[0], ids[slot] = ids[slot], ids[0]
	links := make([]companyLink, len(ids))
	for i, c := range ids {
		links[i] = companyLink{company: c, sort: 100 + 10*i, primary: c == primary}
	}
	return links
}

// dealRow is a deal: its funnel and a stage of that funnel, an exact amount with its currency,
// a company and one to three contacts.
func (p *Portal) dealRow(id int, original bool) object {
	r := p.rng(kindDeal, id)
	created, updated := p.crmDates(r)
	cat := dealCategories[r.IntN(len(dealCategories))]
	_, prefix, _ := stageEntity(etDeal, cat.id)
	stage := stageCodes(etDeal)[r.IntN(5)]
	companyID := any(0)
	if n := len(p.genCompanies); n > 0 {
		companyID = p.genCompanies[r.IntN(n)]
	}
	if len(p.genDeals) > 1 && id == p.genDeals[1] && p.deletedCompany != 0 {
		companyID = p.deletedCompany
	}
	contactIDs := []any{}
	if n := len(p.genContacts); n > 0 {
		for k := 0; k < 1+r.IntN(3); k++ {
			c := p.genContacts[r.IntN(n)]
			if !containsAny(contactIDs, c) {
				contactIDs = append(contactIDs, c)
			}
		}
	}
	contactID := any(0)
	if len(contactIDs) > 0 {
		contactID = contactIDs[0]
	}
	amount := money(r)
	if len(p.genDeals) > 2 && id == p.genDeals[2] {
		amount = json.RawMessage("12345678901234.56") // more digits than a float64 keeps exactly
	}
	enum := []any{}
	if r.IntN(2) == 0 {
		enum = append(enum, pick(r, []int{3157, 3159, 3161, 3163, 3181}))
	}
	moved := p.past(between(r, created, 30*24*time.Hour))
	return p.crmTimes(etDeal, id, object{
		{"id", id}, {"title", fmt.Sprintf("Сделка №%d", id)}, {"categoryId", cat.id}, {"stageId", prefix + stage[0]},
		{"stageSemanticId", map[string]string{"process": "P", "success": "S", "failure": "F"}[stage[2]]},
		{"isNew", "N"}, {"opportunity", amount}, {"isManualOpportunity", "Y"}, {"taxValue", json.RawMessage("0")},
		{"currencyId", pick(r, currencies)}, {"companyId", companyID}, {"contactId", contactID}, {"contactIds", contactIDs},
		{"sourceId", "CALL"}, {"opened", "Y"}, {"closed", map[bool]string{true: "Y", false: "N"}[stage[2] != "process"]},
		{"assignedById", p.pickUser(r)}, {"createdBy", p.pickUser(r)}, {"updatedBy", p.pickUser(r)}, {"movedBy", p.pickUser(r)},
		{"observers", []any{p.pickUser(r)}},
		{"createdTime", p.isoDate(created)}, {"updatedTime", p.isoDate(updated)}, {"movedTime", p.isoDate(moved)},
		{"begindate", p.isoDate(created.Truncate(24 * time.Hour))}, {"closedate", p.isoDate(created.AddDate(0, 1, 0).Truncate(24 * time.Hour))},
		{ufName("UF_CRM_1724077760", original), enum},
		{ufName("UF_CRM_HELLO_WORLD", original), []any{fmt.Sprintf("Комментарий к сделке %d", id)}},
	})
}

// smartRow is an item of a smart process: its own funnel and stages, a company, contacts, a
// parent deal, and the process's own custom fields.
func (p *Portal) smartRow(t smartType, id int, original bool) object {
	r := p.rng(kindSmart, id*10000+t.entityTypeID)
	created, updated := p.crmDates(r)
	cat := t.categories[r.IntN(len(t.categories))]
	_, prefix, _ := stageEntity(t.entityTypeID, cat)
	stage := stageCodes(t.entityTypeID)[r.IntN(4)]
	companyID, parentDeal := any(0), any(0)
	if n := len(p.genCompanies); n > 0 {
		companyID = p.genCompanies[r.IntN(n)]
	}
	if n := len(p.genDeals); n > 0 && r.IntN(2) == 0 {
		parentDeal = p.genDeals[r.IntN(n)]
	}
	contactIDs := []any{}
	if n := len(p.genContacts); n > 0 {
		contactIDs = append(contactIDs, p.genContacts[r.IntN(n)])
	}
	row := object{
		{"id", id}, {"entityTypeId", t.entityTypeID}, {"title", fmt.Sprintf("%s №%d", t.title, id)},
		{"categoryId", cat}, {"stageId", prefix + stage[0]}, {"opportunity", money(r)}, {"currencyId", "RUB"},
		{"isManualOpportunity", "Y"}, {"companyId", companyID}, {"contactId", firstOr0(contactIDs)}, {"contactIds", contactIDs},
		{"parentId2", parentDeal}, {"opened", "Y"},
		{"assignedById", p.pickUser(r)}, {"createdBy", p.pickUser(r)}, {"updatedBy", p.pickUser(r)},
		{"createdTime", p.isoDate(created)}, {"updatedTime", p.isoDate(updated)},
		{"begindate", p.isoDate(created.Truncate(24 * time.Hour))},
	}
	if t.id != 7 {
		// Not every answer names the item's type: the second process's leave it out.
		row = slices.DeleteFunc(row, func(f field) bool { return f.key == "entityTypeId" })
	}
	if t.id == 7 {
		row = append(row, field{ufName("UF_CRM_7_COLOR", original), pick(r, []string{"красный", "зелёный", "синий"})},
			field{ufName("UF_CRM_7_PRIORITY", original), pick(r, []int{801, 802, 803})})
	} else {
		row = append(row, field{ufName(longSmartField, original), fmt.Sprintf("Отдел %d", 1+r.IntN(9))})
	}
	return p.crmTimes(t.entityTypeID, id, row)
}

// firstOr0 is a list's first value, 0 for an empty one (a portal without contacts).
func firstOr0(list []any) any {
	if len(list) == 0 {
		return 0
	}
	return list[0]
}

func containsAny(list []any, v any) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// smartUserfields renders userfieldconfig.list's rows of the smart processes' custom fields.
func smartUserfields() []object {
	label := func(s string) object { return object{{"ru", s}, {"en", s}} }
	return []object{
		{{"id", "7101"}, {"entityId", "CRM_7"}, {"fieldName", "UF_CRM_7_COLOR"}, {"userTypeId", "string"}, {"xmlId", nil},
			{"sort", "100"}, {"multiple", "N"}, {"mandatory", "N"}, {"showFilter", "E"}, {"showInList", "Y"}, {"editInList", "Y"},
			{"isSearchable", "N"}, {"settings", object{{"SIZE", 20}, {"ROWS", 1}, {"DEFAULT_VALUE", ""}}},
			{"editFormLabel", label("Цвет")}, {"listColumnLabel", label("Цвет")}, {"listFilterLabel", nil}, {"errorMessage", nil}, {"helpMessage", nil}},
		{{"id", "7102"}, {"entityId", "CRM_7"}, {"fieldName", "UF_CRM_7_PRIORITY"}, {"userTypeId", "enumeration"}, {"xmlId", nil},
			{"sort", "200"}, {"multiple", "N"}, {"mandatory", "N"}, {"showFilter", "E"}, {"showInList", "Y"}, {"editInList", "Y"},
			{"isSearchable", "N"}, {"settings", object{{"DISPLAY", "LIST"}, {"LIST_HEIGHT", 1}}},
			{"editFormLabel", label("Приоритет")}, {"listColumnLabel", nil}, {"listFilterLabel", nil}, {"errorMessage", nil}, {"helpMessage", nil},
			{"enum", []object{
				{{"id", "801"}, {"value", "Низкий"}, {"def", "N"}, {"sort", "10"}, {"xmlId", "low"}},
				{{"id", "802"}, {"value", "Средний"}, {"def", "Y"}, {"sort", "20"}, {"xmlId", "medium"}},
				{{"id", "803"}, {"value", "Высокий"}, {"def", "N"}, {"sort", "30"}, {"xmlId", "high"}},
			}}},
		{{"id", "9101"}, {"entityId", "CRM_9"}, {"fieldName", longSmartField}, {"userTypeId", "string"}, {"xmlId", nil},
			{"sort", "100"}, {"multiple", "N"}, {"mandatory", "N"}, {"showFilter", "E"}, {"showInList", "Y"}, {"editInList", "Y"},
			{"isSearchable", "N"}, {"settings", object{{"SIZE", 20}}},
			{"editFormLabel", label("Ответственный отдел")}, {"listColumnLabel", nil}, {"listFilterLabel", nil}, {"errorMessage", nil}, {"helpMessage", nil}},
	}
}

// productRows are a deal's product rows: every third deal has two, the fourth deal 53 (more than
// a page); a deleted deal has none.
func (p *Portal) productRows(dealID int) []object {
	if indexOf(p.deals, dealID) < 0 {
		return nil
	}
	i := indexOf(p.genDeals, dealID)
	n := 0
	switch {
	case i < 0: // added since (mutate.go)
	case i == 3:
		n = 53
	case i%3 == 0:
		n = 2
	}
	r := p.rng(kindDeal, dealID*7)
	rows := make([]object, n)
	for k := range rows {
		price := json.RawMessage(fmt.Sprintf("%d.%02d", 100+r.IntN(100000), r.IntN(100)))
		rows[k] = object{
			{"id", dealID*100 + k + 1}, {"ownerId", dealID}, {"ownerType", "D"}, {"productId", 9000 + r.IntN(500)},
			{"productName", fmt.Sprintf("Товар %d", 1+r.IntN(300))}, {"price", price}, {"priceAccount", price},
			{"priceExclusive", price}, {"priceNetto", price}, {"priceBrutto", price}, {"quantity", 1 + r.IntN(10)},
			{"discountTypeId", 2}, {"discountRate", 0}, {"discountSum", 0}, {"taxRate", nil}, {"taxIncluded", "N"},
			{"customized", "Y"}, {"measureCode", 796}, {"measureName", "шт"}, {"sort", 10 * (k + 1)}, {"xmlId", ""},
			{"type", 1}, {"storeId", nil},
		}
	}
	return p.productRowChanges(dealID, rows)
}

func indexOf(ids []int, id int) int {
	lo, hi := 0, len(ids)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case ids[m] == id:
			return m
		case ids[m] < id:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

// CRMCounts says how many records of each CRM kind the portal holds, for tests.
type CRMCounts struct {
	Companies, Contacts, Deals, SmartItems, SmartTypes, Stages, Categories, ProductRows int
	// DeletedCompany is the id of the deleted company the second deal still refers to.
	DeletedCompany int
}

// CRM returns what the portal's CRM holds.
func (p *Portal) CRM() CRMCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := CRMCounts{Companies: len(p.companies), Contacts: len(p.contacts), Deals: len(p.deals),
		DeletedCompany: p.deletedCompany}
	for _, et := range append([]int{etCompany, etContact, etDeal}, p.smartTypeIDs()...) {
		cats, _ := p.categoriesOf(et)
		c.Categories += len(cats)
		for _, cat := range cats {
			if ent, _, ok := stageEntity(et, cat.id); ok {
				c.Stages += len(p.stageRows(ent))
			}
		}
	}
	if p.opts.SmartItems > 0 {
		c.SmartTypes = len(smartTypes)
		c.SmartItems = len(p.smartItems) * len(smartTypes)
	}
	for _, d := range p.deals {
		c.ProductRows += len(p.productRows(d))
	}
	return c
}
