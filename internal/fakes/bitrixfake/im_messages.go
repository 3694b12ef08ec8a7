package bitrixfake

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// message is one chat message before rendering.
type message struct {
	id, chatID int
	author     int // 0: a system message
	date       time.Time
	text       string
	params     object // nil renders as [] (PHP's empty array)
	files      []int
	uuid       string // "" renders as null, as for system messages
}

var (
	phrases = []string{
		"Коллеги, добрый день!", "Договор отправил на согласование.", "Созвон перенесли на 15:00.",
		"Отчёт за прошлую неделю готов, посмотрите, пожалуйста.", "Спасибо, принято.",
		"Клиент просит скидку 10%, что скажете?", "Макеты обновил, ссылка ниже.",
		"Кто сегодня дежурит по поддержке?", "Счёт оплачен, документы в бухгалтерии.",
		"Напоминаю про дедлайн в пятницу.", "Сервер обновили, всё работает.",
		"Можно подробнее про требования?", "Согласен, давайте так и сделаем.",
		"Я на встрече до обеда, отвечу позже.", "Выложил новую версию презентации.",
	}
	fileNames = []struct{ name, ext, typ string }{
		{"Договор поставки", "docx", "file"}, {"Отчёт", "xlsx", "file"}, {"Скриншот", "png", "image"},
		{"Фото", "jpg", "image"}, {"Презентация", "pptx", "file"}, {"Счёт", "pdf", "file"},
	}
)

// quoteLine is the rule Bitrix draws around a quoted message.
const quoteLine = "------------------------------------------------------"

// dateOf is the date of a message: dates grow with IDs, with some jitter
// that never reorders them.
func (s *imState) dateOf(id int, r *rand.Rand) time.Time {
	t := s.start.Add(time.Duration(id-s.first) * s.step)
	if r != nil {
		t = t.Add(time.Duration(r.Int64N(int64(s.step / 2))))
	}
	return t.Truncate(time.Second)
}

// findMessage returns a message by ID, with the edits tests made.
func (p *Portal) findMessage(id int) (message, bool) {
	s := &p.im
	var m message
	if added, ok := s.addedMsgs[id]; ok {
		m = added
	} else {
		n := len(s.chats)
		if n == 0 || id < s.first || id >= s.first+s.perChat*n {
			return message{}, false
		}
		m = p.generatedMessage(s.chats[(id-s.first)%n], (id-s.first)/n, id)
	}
	if text, ok := s.edits[id]; ok {
		m.text = text
		m.params.set("IS_EDITED", "Y")
	}
	return m, true
}

// generatedMessage builds the k-th message of a chat from its ID.
func (p *Portal) generatedMessage(c *chat, k, id int) message {
	r := p.rng(kindMessage, id)
	m := message{id: id, chatID: c.id, date: p.im.dateOf(id, r)}
	if k == 0 && c.kind != chatPrivate && len(c.people) > 0 {
		return p.openingMessage(c, m)
	}
	if c.kind != chatPrivate && c.kind != chatOpenLine && len(c.people) > 2 && r.IntN(50) == 0 {
		// Someone invited later: a system message naming people of the chat.
		m.text = fmt.Sprintf("%s пригласил(а) в чат %s", p.userTag(c.owner, true), p.userTag(pick(r, c.people), true))
		m.params = object{{"CODE", []any{"CHAT_JOIN"}}, {"NOTIFY", "N"}}
		return m
	}
	m.author = pick(r, c.people)
	m.uuid = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Int64N(1<<48))
	switch roll := r.IntN(100); {
	case roll < 45:
		m.text = pick(r, phrases)
	case roll < 55:
		m.text = "[b]Важно:[/b] " + pick(r, phrases)
	case roll < 65:
		m.text = p.userTag(pick(r, c.people), false) + ", " + pick(r, phrases)
	case roll < 70:
		m.text = fmt.Sprintf("Смотрите [URL=https://example.ru/docs/%d]документ[/URL], [i]%s[/i]", id, pick(r, phrases))
	case roll < 75:
		m.text = fmt.Sprintf("План:\n1. %s\n2. %s\n3. %s", pick(r, phrases), pick(r, phrases), pick(r, phrases))
	case roll < 80:
		quoted := pick(r, c.people)
		m.text = fmt.Sprintf("%s\n%s [%s]\n%s\n%s\n%s", quoteLine, p.displayName(quoted),
			p.isoDate(m.date.Add(-time.Hour)), pick(r, phrases), quoteLine, pick(r, phrases))
	case roll < 88:
		m.files = []int{2 * id}
		if r.IntN(4) == 0 {
			m.files = append(m.files, 2*id+1)
		}
		if r.IntN(2) == 0 {
			m.text = pick(r, phrases)
		}
		m.params = object{{"FILE_ID", m.files}}
	case roll < 94:
		m.text = pick(r, phrases) + " :)"
	default:
		m.text = fmt.Sprintf("[s]%s[/s] [u]%s[/u]", pick(r, phrases), pick(r, phrases))
	}
	if r.IntN(20) == 0 {
		m.params.set("LIKE", []int{pick(r, c.people)})
	}
	if r.IntN(30) == 0 {
		m.params.set("IS_EDITED", "Y")
	}
	return m
}

// openingMessage is the system message a chat starts with.
func (p *Portal) openingMessage(c *chat, m message) message {
	switch c.kind {
	case chatTask:
		m.text = fmt.Sprintf("%s создал(а) задачу «%s»", p.userTag(c.owner, false), c.title)
		m.params = object{{"NOTIFY", "N"}}
	case chatOpenLine:
		m.text = "Обращение принято, оператор скоро ответит"
		m.params = object{{"NOTIFY", "N"}}
	default:
		var invited []string
		for _, u := range c.people[:min(len(c.people), 4)] {
			if u != c.owner {
				invited = append(invited, p.userTag(u, true))
			}
		}
		m.text = fmt.Sprintf("%s пригласил(а) в чат %s", p.userTag(c.owner, true), strings.Join(invited, ", "))
		m.params = object{{"CODE", []any{"CHAT_JOIN"}}, {"NOTIFY", "N"}}
	}
	return m
}

// userTag is the BB-code mention of a user; system messages write it with
// REPLACE (fixture im.dialog.messages.get.json).
func (p *Portal) userTag(id int, replace bool) string {
	if replace {
		return fmt.Sprintf("[USER=%d REPLACE]%s[/USER]", id, p.displayName(id))
	}
	return fmt.Sprintf("[USER=%d]%s[/USER]", id, p.displayName(id))
}

// displayName is a user's full name as chats show it.
func (p *Portal) displayName(id int) string {
	if name, ok := p.im.guests[id]; ok {
		return name
	}
	row := p.userRow(id)
	first, _ := row.get("NAME")
	last, _ := row.get("LAST_NAME")
	return strval(first) + " " + strval(last)
}

// render is a message as im.dialog.messages.get returns it.
func (p *Portal) render(m message) object {
	var uuid any
	if m.uuid != "" {
		uuid = m.uuid
	}
	var params any = []any{}
	if len(m.params) > 0 {
		params = m.params
	}
	return object{
		{"id", m.id},
		{"chat_id", m.chatID},
		{"author_id", m.author},
		{"date", p.isoDate(m.date)},
		{"text", m.text},
		{"unread", false},
		{"uuid", uuid},
		{"replaces", []any{}},
		{"params", params},
		{"disappearing_date", nil},
	}
}

// file is the metadata of an attached file, as in the "files" list of
// im.dialog.messages.get (fixture); "image" is false for what is not an
// image, and the URLs point nowhere.
func (p *Portal) file(id int, m message) object {
	r := p.rng(kindMessage, id)
	f := pick(r, fileNames)
	name := fmt.Sprintf("%s %d.%s", f.name, id, f.ext)
	url := func(action string) string {
		return fmt.Sprintf("https://portal.example.bitrix24.ru/bitrix/services/main/ajax.php?action=disk.api.file.%s&SITE_ID=s1&humanRE=1&fileId=%d&fileName=%s",
			action, id, f.ext)
	}
	var image any = false
	if f.typ == "image" {
		image = object{{"height", 200 + r.IntN(900)}, {"width", 200 + r.IntN(1400)}}
	}
	return object{
		{"id", id},
		{"chatId", m.chatID},
		{"date", p.isoDate(m.date)},
		{"type", f.typ},
		{"name", name},
		{"extension", f.ext},
		{"size", 1000 + r.IntN(5_000_000)},
		{"image", image},
		{"status", "done"},
		{"progress", 100},
		{"authorId", m.author},
		{"authorName", p.displayName(m.author)},
		{"urlPreview", url("download")},
		{"urlShow", url("showImage")},
		{"urlDownload", url("download")},
		{"viewerAttrs", object{{"viewer", ""}, {"viewerType", f.typ}, {"src", url("download")}, {"viewerResized", ""},
			{"objectId", strconv.Itoa(id)}, {"viewerGroupBy", strconv.Itoa(m.chatID)}, {"imChatId", m.chatID},
			{"title", name}, {"actions", `[{"type":"download"}]`}}},
		{"mediaUrl", object{{"preview", object{{"250", url("download")}}}}},
		{"isTranscribable", false},
		{"isVideoNote", false},
		{"isVoiceNote", false},
	}
}

// imUser is a user as im methods describe one (fixture
// im.dialog.messages.get.json, "users"): from the user's row, or an Open
// Channel guest.
func (p *Portal) imUser(id int) object {
	if name, ok := p.im.guests[id]; ok {
		first, last, _ := strings.Cut(name, " ")
		return object{
			{"id", id}, {"active", true}, {"name", name}, {"first_name", first}, {"last_name", last},
			{"work_position", ""}, {"color", chatColors[id%len(chatColors)]}, {"avatar", ""}, {"avatar_hr", ""},
			{"gender", "M"}, {"birthday", ""}, {"extranet", true}, {"network", false}, {"bot", false},
			{"connector", true}, {"external_auth_id", "imconnector"}, {"status", "online"}, {"idle", false},
			{"last_activity_date", false}, {"mobile_last_date", false}, {"desktop_last_date", false},
			{"absent", false}, {"departments", []int{}}, {"phones", false}, {"bot_data", nil},
			{"type", "user"}, {"website", ""}, {"email", ""},
		}
	}
	row := p.user(id)
	get := func(key string) any { v, _ := row.get(key); return v }
	gender := strval(get("PERSONAL_GENDER"))
	if gender == "" {
		gender = "M"
	}
	return object{
		{"id", id},
		{"active", get("ACTIVE") == true},
		{"name", strval(get("NAME")) + " " + strval(get("LAST_NAME"))},
		{"first_name", get("NAME")},
		{"last_name", get("LAST_NAME")},
		{"work_position", strval(get("WORK_POSITION"))},
		{"color", chatColors[id%len(chatColors)]},
		{"avatar", ""},
		{"avatar_hr", ""},
		{"gender", gender},
		{"birthday", ""},
		{"extranet", get("USER_TYPE") == "extranet"},
		{"network", false},
		{"bot", false},
		{"connector", false},
		{"external_auth_id", "default"},
		{"status", "online"},
		{"idle", false},
		{"last_activity_date", get("LAST_LOGIN")},
		{"mobile_last_date", false},
		{"desktop_last_date", false},
		{"absent", false},
		{"departments", get("UF_DEPARTMENT")},
		{"phones", false},
		{"bot_data", nil},
		{"type", "user"},
		{"website", ""},
		{"email", get("EMAIL")},
	}
}
