package bitrixfake

import "strconv"

// Incoming webhooks of other users. A portal has one incoming webhook per user who made one,
// /rest/<user id>/<token>/, and each acts as its user (research/bitrix.md §5.5): what it reads is
// what that user may read. The fake honours the caller in the live feed: log.blogcomment.user.get
// answers a user's own comments with their text, USER_ID is honoured only for administrators, and
// an administrator asking for another author's comments gets them with the text withheld (empty);
// log.blogpost.get shows the posts the caller may see; user.admin answers for the caller. Every
// other method answers as for the portal's main webhook.

// webhook is another user's incoming webhook.
type webhook struct {
	token string
	admin bool
}

// AddWebhook gives the portal an incoming webhook of another user (an ordinary user unless admin)
// and returns its path, "/rest/<user id>/<token>/".
func (p *Portal) AddWebhook(userID int, token string, admin bool) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.webhooks == nil {
		p.webhooks = map[string]webhook{}
	}
	id := strconv.Itoa(userID)
	p.webhooks[id] = webhook{token: token, admin: admin}
	return "/rest/" + id + "/" + token + "/"
}

// authorized checks a request's webhook and remembers its user as the caller. It runs with the
// portal's lock held; ServeHTTP forgets the caller when it has answered.
func (p *Portal) authorized(userID, token string) bool {
	switch w, ok := p.webhooks[userID]; {
	case userID == p.opts.UserID && token == p.opts.Token:
	case ok && token == w.token:
	default:
		return false
	}
	p.callerID = intval(userID)
	return true
}

// caller is the user whose webhook made the current request; the main webhook's user outside one.
func (p *Portal) caller() int {
	if p.callerID != 0 {
		return p.callerID
	}
	return p.me()
}

// callerAdmin says whether the caller is an administrator.
func (p *Portal) callerAdmin() bool {
	if c := p.caller(); c != p.me() {
		return p.webhooks[strconv.Itoa(c)].admin
	}
	return !p.opts.NotAdmin
}
