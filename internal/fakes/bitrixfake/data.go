package bitrixfake

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// The portal's data is generated from the seed and each record's ID, so
// a portal of any size costs no memory beyond its ID lists and whatever
// tests changed. Shapes follow the documentation's samples (user.get.json,
// sonet_group.get.json, sonet_group.user.get.json).

const (
	kindUser uint64 = iota + 1
	kindGroup
)

func (p *Portal) rng(kind uint64, id int) *rand.Rand {
	return rand.New(rand.NewPCG(p.opts.Seed, uint64(id)<<4|kind))
}

// generateIDs returns n ascending IDs with gaps, like a table some rows
// were deleted from: every gapEvery-th ID is skipped.
func generateIDs(n, gapEvery int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = 1 + i + i/(gapEvery-1)
	}
	return ids
}

type name struct{ ru, lat string }

var (
	maleNames = []name{{"Александр", "aleksandr"}, {"Дмитрий", "dmitry"}, {"Максим", "maksim"},
		{"Сергей", "sergey"}, {"Андрей", "andrey"}, {"Алексей", "aleksey"}, {"Артём", "artem"},
		{"Илья", "ilya"}, {"Кирилл", "kirill"}, {"Михаил", "mikhail"}, {"Никита", "nikita"},
		{"Иван", "ivan"}, {"Павел", "pavel"}, {"Роман", "roman"}, {"Олег", "oleg"}, {"Владимир", "vladimir"}}
	femaleNames = []name{{"Анна", "anna"}, {"Мария", "maria"}, {"Елена", "elena"}, {"Ольга", "olga"},
		{"Наталья", "natalia"}, {"Екатерина", "ekaterina"}, {"Татьяна", "tatiana"}, {"Ирина", "irina"},
		{"Светлана", "svetlana"}, {"Юлия", "yulia"}, {"Дарья", "daria"}, {"Ксения", "ksenia"},
		{"Алина", "alina"}, {"Виктория", "viktoria"}}
	lastNames = []name{{"Иванов", "ivanov"}, {"Смирнов", "smirnov"}, {"Кузнецов", "kuznetsov"},
		{"Попов", "popov"}, {"Васильев", "vasiliev"}, {"Петров", "petrov"}, {"Соколов", "sokolov"},
		{"Михайлов", "mikhailov"}, {"Новиков", "novikov"}, {"Фёдоров", "fedorov"}, {"Морозов", "morozov"},
		{"Волков", "volkov"}, {"Алексеев", "alekseev"}, {"Лебедев", "lebedev"}, {"Семёнов", "semenov"},
		{"Егоров", "egorov"}, {"Павлов", "pavlov"}, {"Козлов", "kozlov"}, {"Степанов", "stepanov"},
		{"Николаев", "nikolaev"}}
	patronymics = [][2]string{{"Александрович", "Александровна"}, {"Дмитриевич", "Дмитриевна"},
		{"Сергеевич", "Сергеевна"}, {"Андреевич", "Андреевна"}, {"Алексеевич", "Алексеевна"},
		{"Михайлович", "Михайловна"}, {"Иванович", "Ивановна"}, {"Павлович", "Павловна"},
		{"Владимирович", "Владимировна"}, {"Олегович", "Олеговна"}}
	positions = []string{"Менеджер по продажам", "Бухгалтер", "Разработчик", "Руководитель отдела",
		"Аналитик", "Дизайнер", "HR-специалист", "Юрист", "Инженер", "Секретарь", ""}
	cities     = []string{"Москва", "Санкт-Петербург", "Казань", "Новосибирск", "Екатеринбург", "Самара", ""}
	groupWords = []string{"Продажи", "Маркетинг", "Разработка", "Поддержка", "Логистика", "Финансы",
		"Закупки", "Кадры", "Юридический отдел", "Производство", "Склад", "Дизайн", "Аналитика"}
	groupKinds = []string{"Проект", "Рабочая группа", "Инициатива", "Команда"}
)

func pick[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

// isoDate renders t like PHP's date('c') in the portal's time zone.
func (p *Portal) isoDate(t time.Time) string {
	return t.In(p.opts.Location).Format("2006-01-02T15:04:05-07:00")
}

// between returns a random instant in [from, from+span).
func between(r *rand.Rand, from time.Time, span time.Duration) time.Time {
	return from.Add(time.Duration(r.Int64N(int64(span))))
}

func (p *Portal) epoch() time.Time { return time.Date(2015, 1, 1, 9, 0, 0, 0, p.opts.Location) }

// userRow builds the user.get row of a user, before test overrides.
func (p *Portal) userRow(id int) object {
	r := p.rng(kindUser, id)
	female := r.IntN(2) == 0
	first := pick(r, maleNames)
	last := pick(r, lastNames)
	lastRU, lastLat := last.ru, last.lat
	patronymic := pick(r, patronymics)[0]
	gender := "M"
	if female {
		first = pick(r, femaleNames)
		lastRU += "а"
		lastLat += "a"
		patronymic = pick(r, patronymics)[1]
		gender = "F"
	}
	if r.IntN(5) == 0 {
		patronymic = ""
	}
	active := r.IntN(100) >= 7 // a few dismissed employees
	registered := between(r, p.epoch(), 10*365*24*time.Hour)
	lastLogin := p.past(between(r, registered, 60*24*time.Hour))
	modified := p.past(between(r, registered, 300*24*time.Hour))
	registered = p.past(registered)
	birthday, employment, mobile := "", "", ""
	if r.IntN(3) > 0 {
		b := time.Date(1960+r.IntN(42), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, p.opts.Location)
		birthday = p.isoDate(b)
	}
	if r.IntN(2) == 0 {
		y, m, d := registered.Date()
		employment = p.isoDate(time.Date(y, m, d, 0, 0, 0, 0, p.opts.Location))
	}
	if r.IntN(2) == 0 {
		mobile = fmt.Sprintf("+7 9%02d %03d-%02d-%02d", r.IntN(100), r.IntN(1000), r.IntN(100), r.IntN(100))
	}
	structure := 40 // department ids a portal without a structure (Options.Departments) names
	if p.opts.Departments > 0 {
		structure = p.opts.Departments
	}
	departments := []int{1 + r.IntN(structure)}
	if r.IntN(10) == 0 {
		departments = append(departments, 1+r.IntN(structure))
	}
	enum := []int{}
	for _, opt := range []int{26, 27, 28} { // LIST ids of UF_USR_1724228142162
		if r.IntN(3) == 0 {
			enum = append(enum, opt)
		}
	}
	money := ""
	if r.IntN(2) == 0 {
		money = strconv.Itoa(1000*(1+r.IntN(300))) + "|RUB"
	}
	userType, timeZone, online := "employee", "", "N"
	if r.IntN(30) == 0 {
		userType = "extranet"
	}
	if r.IntN(4) == 0 {
		timeZone = "Europe/Moscow"
	}
	if r.IntN(20) == 0 {
		online = "Y"
	}
	return object{
		{"ID", strconv.Itoa(id)},
		{"ACTIVE", active},
		{"NAME", first.ru},
		{"LAST_NAME", lastRU},
		{"SECOND_NAME", patronymic},
		{"EMAIL", fmt.Sprintf("%s.%s.%d@example.ru", first.lat[:1], lastLat, id)},
		{"LAST_LOGIN", p.isoDate(lastLogin)},
		{"DATE_REGISTER", p.isoDate(registered)},
		{"TIME_ZONE", timeZone},
		{"IS_ONLINE", online},
		// Not ISO 8601: the portal's own formats, as in the batch.json sample.
		{"TIMESTAMP_X", modified.In(p.opts.Location).Format("02.01.2006 15:04:05")},
		{"LAST_ACTIVITY_DATE", lastLogin.In(p.opts.Location).Format("2006-01-02 15:04:05")},
		{"PERSONAL_GENDER", gender},
		{"PERSONAL_WWW", ""},
		{"PERSONAL_BIRTHDAY", birthday},
		{"PERSONAL_MOBILE", mobile},
		{"PERSONAL_CITY", pick(r, cities)},
		{"WORK_PHONE", ""},
		{"WORK_POSITION", pick(r, positions)},
		{"UF_EMPLOYMENT_DATE", employment},
		{"UF_DEPARTMENT", departments},
		{"UF_PHONE_INNER", strconv.Itoa(100 + id%900)},
		{"UF_USR_1724228142162", enum},
		{"UF_USR_MONEY", money},
		{"USER_TYPE", userType},
	}
}

// member is one membership of a group.
type member struct {
	userID int
	role   string // A owner, E moderator, K member
}

// groupMembers returns every membership of a group as generated, the owner
// first, dismissed users included.
func (p *Portal) groupMembers(groupID int) []member {
	if len(p.allUsers) == 0 {
		return nil
	}
	r := p.rng(kindGroup, groupID)
	size := 2 + r.IntN(24)
	if r.IntN(20) == 0 {
		size = 50 + r.IntN(250) // a few company-wide groups
	}
	size = min(size, len(p.allUsers))
	seen := make(map[int]bool, size)
	out := make([]member, 0, size)
	for len(out) < size {
		id := p.allUsers[r.IntN(len(p.allUsers))]
		if seen[id] {
			continue
		}
		seen[id] = true
		role := "K"
		switch {
		case len(out) == 0:
			role = "A"
		case len(out) <= 2 && r.IntN(2) == 0:
			role = "E"
		}
		out = append(out, member{id, role})
	}
	return out
}

// groupRow builds the sonet_group.get row of a group, before overrides.
func (p *Portal) groupRow(id int, members int) object {
	r := p.rng(kindGroup, id)
	owner := "1"
	if all := p.groupMembers(id); len(all) > 0 {
		owner = strconv.Itoa(all[0].userID)
	}
	created := between(r, p.epoch(), 10*365*24*time.Hour)
	updated := between(r, created, 90*24*time.Hour)
	activity := p.past(between(r, updated, 90*24*time.Hour))
	created, updated = p.past(created), p.past(updated)
	var description, keywords any
	if r.IntN(5) > 1 {
		description = "Рабочее пространство: " + pick(r, groupWords) + ", задачи и обсуждения."
	}
	if r.IntN(3) == 0 {
		keywords = "работа, " + pick(r, groupWords)
	}
	yn := func(yesPercent int) string {
		if r.IntN(100) < yesPercent {
			return "Y"
		}
		return "N"
	}
	project := yn(30)
	subjectID, subjectName := "1", "Рабочие группы"
	if project == "Y" {
		subjectID, subjectName = "2", "Проекты"
	}
	return object{
		{"ID", strconv.Itoa(id)},
		{"SITE_ID", "s1"},
		{"NAME", fmt.Sprintf("%s «%s» №%d", pick(r, groupKinds), pick(r, groupWords), id)},
		{"DESCRIPTION", description},
		{"DATE_CREATE", p.isoDate(created)},
		{"DATE_UPDATE", p.isoDate(updated)},
		{"ACTIVE", yn(95)},
		{"VISIBLE", yn(85)},
		{"OPENED", yn(40)},
		{"CLOSED", yn(10)},
		{"SUBJECT_ID", subjectID},
		{"OWNER_ID", owner},
		{"KEYWORDS", keywords},
		{"NUMBER_OF_MEMBERS", strconv.Itoa(members)},
		{"DATE_ACTIVITY", p.isoDate(activity)},
		{"SUBJECT_NAME", subjectName},
		{"PROJECT", project},
		{"IS_EXTRANET", "N"},
	}
}
