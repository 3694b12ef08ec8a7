package graphfake

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// account is one Instagram professional account the fake knows.
type account struct {
	id, username, name, bio, website string
	followers, follows               int
	connected                        bool   // the app holds its token
	token                            string // connected only
	spec                             AccountSpec
	media                            []*media // feed media and reels, newest first
	stories                          []*media
	// servedFirstPage is set once the first media page was served (for DeleteBetweenPages).
	servedFirstPage bool
	// rejectedCursor is set once a cursor was refused (for RejectCursorOnce).
	rejectedCursor bool
	// isGen: a generated account (Options.GeneratedAccounts), number genIndex.
	isGen    bool
	genIndex int
}

// media is a post, reel, story or carousel child.
type media struct {
	id, caption, mediaType, productType, shortcode string
	ts                                             time.Time
	likes                                          int
	hideLikes                                      bool
	commentsEnabled                                bool
	copyrighted                                    bool // media_url omitted (research/social.md §1.2)
	owner                                          *account
	children                                       []*media
	comments                                       []*comment // top level, newest first
	deleted                                        bool
	parent                                         *media // for a carousel child

	// rawCaption, when set, is the caption as a JSON string token written into answers byte for
	// byte (SetRawCaption), in place of caption.
	rawCaption json.RawMessage
}

// commentsCount counts comments and replies, as the platform does.
func (m *media) commentsCount() int {
	n := 0
	for _, c := range m.comments {
		n += 1 + len(c.replies)
	}
	return n
}

// comment is a comment or a reply.
type comment struct {
	id, text, username, fromID string
	ts                         time.Time
	likes                      int
	hidden                     bool
	media                      *media
	parent                     *comment
	replies                    []*comment // oldest first, as /replies lists them
}

// idGen hands out media and comment ids.
type idGen interface {
	media() string
	comment() string
}

// ids hands out numeric ids shaped like the platform's (17 or 18 digits).
type ids struct{ next uint64 }

func (g *ids) media() string   { g.next++; return fmt.Sprintf("179%015d", g.next) }
func (g *ids) comment() string { g.next++; return fmt.Sprintf("178%015d", g.next) }
func (g *ids) user() string    { g.next++; return fmt.Sprintf("1784140%011d", g.next) }

var words = strings.Fields(`morning coffee launch team studio new drop summer city light design
behind the scenes workshop recipe travel story weekend market handmade release update today
community event thanks everyone together friends colour craft season local fresh garden`)

var hashtags = []string{"instagood", "design", "coffee", "travel", "handmade", "launch", "summer", "behindthescenes", "smallbusiness", "reels"}

var commenters = []string{"anna.k", "lixiangguodu123", "ikroskun", "mark_d", "sofia", "j.doe", "the_cafe", "lena_w", "pavel", "maria.s"}

// generate builds an account's media and comments from its spec, newest first, ending before
// now. Every fourth post is a carousel of 2-5 children, every fifth a reel (every third reel with
// copyrighted audio, so its media_url is omitted), some hide their likes.
func generate(rng *rand.Rand, g idGen, a *account, now time.Time) {
	s := a.spec
	ts := now.Add(-time.Duration(1+rng.IntN(3)) * time.Hour).Truncate(time.Second)
	reels := 0
	for i := range s.Posts {
		m := &media{id: g.media(), owner: a, ts: ts, likes: rng.IntN(500), commentsEnabled: true, mediaType: "IMAGE", productType: "FEED"}
		m.shortcode = shortcode(rng)
		m.caption = caption(rng)
		switch {
		case i%5 == 4:
			m.mediaType, m.productType = "VIDEO", "REELS"
			reels++
			m.copyrighted = reels%3 == 0
		case i%4 == 3:
			m.mediaType = "CAROUSEL_ALBUM"
			for range 2 + rng.IntN(4) {
				c := &media{id: g.media(), owner: a, ts: ts, mediaType: "IMAGE", productType: "FEED", shortcode: shortcode(rng), parent: m}
				if rng.IntN(4) == 0 {
					c.mediaType = "VIDEO"
				}
				m.children = append(m.children, c)
			}
		case i%7 == 6:
			m.mediaType = "VIDEO"
		}
		m.hideLikes = i%11 == 10
		a.media = append(a.media, m)
		ts = ts.Add(-time.Duration(2+rng.IntN(40)) * time.Hour)
	}
	spreadComments(rng, g, a.media, s.Comments)
	for i := range s.Stories {
		st := &media{id: g.media(), owner: a, ts: now.Add(-time.Duration(i+1) * 47 * time.Minute).Truncate(time.Second),
			mediaType: "IMAGE", productType: "STORY", shortcode: shortcode(rng)}
		if i%2 == 1 {
			st.mediaType = "VIDEO"
		}
		a.stories = append(a.stories, st)
	}
}

// spreadComments gives the posts total comments and replies, skewed the way engagement is: a
// few posts hold most of them, many hold none; a few comments have long reply threads (more
// than the platform inlines, so that /replies paging is needed).
func spreadComments(rng *rand.Rand, g idGen, posts []*media, total int) {
	if len(posts) == 0 || total <= 0 {
		return
	}
	for left := total; left > 0; {
		// Zipf-like: the lower the index drawn, the likelier.
		p := posts[min(len(posts)-1, int(float64(len(posts))*rng.Float64()*rng.Float64()))]
		if p.productType == "STORY" {
			continue
		}
		thread := 0
		switch r := rng.IntN(100); {
		case r < 2:
			thread = 30 + rng.IntN(20)
		case r < 20:
			thread = 1 + rng.IntN(3)
		}
		thread = min(thread, left-1)
		c := &comment{id: g.comment(), text: commentText(rng), username: commenters[rng.IntN(len(commenters))], media: p, likes: rng.IntN(20)}
		c.fromID = fmt.Sprintf("1784%012d", rng.Uint64N(1e12))
		c.hidden = rng.IntN(50) == 0
		p.comments = append(p.comments, c)
		for range thread {
			r := &comment{id: g.comment(), text: "@" + c.username + " " + commentText(rng), username: commenters[rng.IntN(len(commenters))], media: p, parent: c}
			r.fromID = fmt.Sprintf("1784%012d", rng.Uint64N(1e12))
			c.replies = append(c.replies, r)
		}
		left -= 1 + thread
	}
	// Timestamps: comments after their post, newest first; replies after their comment, oldest first.
	for _, p := range posts {
		t := p.ts.Add(time.Duration(len(p.comments)+1) * 7 * time.Minute)
		for _, c := range p.comments {
			c.ts = t
			rt := t
			for _, r := range c.replies {
				rt = rt.Add(3 * time.Minute)
				r.ts = rt
			}
			t = t.Add(-7 * time.Minute)
		}
	}
}

func caption(rng *rand.Rand) string {
	n := 4 + rng.IntN(12)
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	for range rng.IntN(4) {
		b.WriteString(" #" + hashtags[rng.IntN(len(hashtags))])
	}
	if rng.IntN(3) == 0 {
		b.WriteString(" with @" + commenters[rng.IntN(len(commenters))])
	}
	return b.String()
}

func commentText(rng *rand.Rand) string {
	texts := []string{"Beautiful!", "Love this 😍", "Where is this?", "So good", "Congrats on the launch!", "Need this #want", "🔥🔥🔥", "Great colours", "Sending to @maria.s", "When does it ship?"}
	return texts[rng.IntN(len(texts))]
}

const shortcodeChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func shortcode(rng *rand.Rand) string {
	b := make([]byte, 11)
	for i := range b {
		b[i] = shortcodeChars[rng.IntN(len(shortcodeChars))]
	}
	return string(b)
}
