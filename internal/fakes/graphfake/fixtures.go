package graphfake

import (
	"encoding/json"
	"time"
)

// fixtureAccounts builds two accounts from the real responses in internal/fakes/fixtures/social: "ikroskun"
// (connected: its media page 1 and 2 with the carousel, comments and a reply, stories re-timed
// to the last day) and "facebookfordevelopers" (read through business discovery: its profile
// and media pages).
func fixtureAccounts(now time.Time) []*account {
	ik := &account{id: "17841406338772941", username: "ikroskun", name: "ikroskun", bio: "", connected: true,
		token: "EAAGikroskunFixtureToken", followers: 120, follows: 80,
		spec: AccountSpec{Username: "ikroskun", Connected: true}}
	for _, f := range []string{"ig_user_media_page1.json", "ig_user_media_page2_carousel_children.json"} {
		ik.media = append(ik.media, mediaFrom(f, nil)...)
	}
	// The comments fixtures were captured on another post of the same account: hang them on
	// the post whose comments_count says it has some.
	for _, m := range ik.media {
		if m.id == "17896622936197745" {
			for _, f := range []string{"ig_media_comments_page1.json", "ig_media_comments_page2_last.json"} {
				var page struct{ Data []rawComment }
				mustJSON(f, &page)
				for _, rc := range page.Data {
					m.comments = append(m.comments, rc.comment(m, nil))
				}
			}
			var withReplies rawComment
			mustJSON("ig_comment_with_replies_expansion.json", &withReplies)
			for _, c := range m.comments {
				if c.id == withReplies.ID {
					c.username = withReplies.Username
					for _, r := range withReplies.Replies.Data {
						c.replies = append(c.replies, r.comment(m, c))
					}
				}
			}
		}
	}
	for i, st := range mediaFrom("ig_user_stories.json", nil) {
		st.productType = "STORY"
		st.ts = now.Add(-time.Duration(i+1) * time.Hour).Truncate(time.Second)
		ik.stories = append(ik.stories, st)
	}

	var profile struct {
		BD struct {
			ID, Biography, Name, Username string
			FollowersCount                int `json:"followers_count"`
		} `json:"business_discovery"`
	}
	mustJSON("ig_business_discovery_profile.json", &profile)
	fb := &account{id: profile.BD.ID, username: profile.BD.Username, name: profile.BD.Name, bio: profile.BD.Biography,
		followers: profile.BD.FollowersCount, follows: 0, spec: AccountSpec{Username: profile.BD.Username}}
	for _, f := range []string{"ig_business_discovery_media_page1.json", "ig_business_discovery_media_page2.json"} {
		fb.media = append(fb.media, mediaFrom(f, []string{"business_discovery", "media"})...)
	}
	return []*account{ik, fb}
}

type rawMedia struct {
	ID, Caption, Permalink, Shortcode, Timestamp string
	MediaType                                    string `json:"media_type"`
	LikeCount                                    int    `json:"like_count"`
	Children                                     struct{ Data []rawMedia }
}

type rawComment struct {
	ID, Text, Timestamp, Username string
	LikeCount                     int `json:"like_count"`
	Replies                       struct{ Data []rawComment }
}

func (rc rawComment) comment(m *media, parent *comment) *comment {
	ts, _ := time.Parse(timeLayout, rc.Timestamp)
	return &comment{id: rc.ID, text: rc.Text, username: rc.Username, ts: ts, likes: rc.LikeCount, media: m, parent: parent, fromID: "17841400000000001"}
}

func mediaFrom(file string, path []string) []*media {
	var raw json.RawMessage
	mustJSON(file, &raw)
	for _, key := range path {
		var o map[string]json.RawMessage
		if err := json.Unmarshal(raw, &o); err != nil {
			panic(err)
		}
		raw = o[key]
	}
	var page struct{ Data []rawMedia }
	if err := json.Unmarshal(raw, &page); err != nil {
		panic(err)
	}
	var out []*media
	for _, rm := range page.Data {
		out = append(out, rm.media(nil))
	}
	return out
}

func (rm rawMedia) media(parent *media) *media {
	ts, _ := time.Parse(timeLayout, rm.Timestamp)
	m := &media{id: rm.ID, caption: rm.Caption, mediaType: rm.MediaType, productType: "FEED", ts: ts, likes: rm.LikeCount,
		shortcode: rm.Shortcode, commentsEnabled: true, parent: parent}
	if m.shortcode == "" {
		m.shortcode = shortcodeOf(rm.Permalink)
	}
	for _, c := range rm.Children.Data {
		m.children = append(m.children, c.media(m))
	}
	return m
}

func shortcodeOf(permalink string) string {
	// https://www.instagram.com/p/CSgf9BChwVq/
	n := len(permalink)
	if n > 13 && permalink[n-1] == '/' {
		for i := n - 2; i >= 0; i-- {
			if permalink[i] == '/' {
				return permalink[i+1 : n-1]
			}
		}
	}
	return ""
}

func mustJSON(file string, v any) {
	if err := json.Unmarshal(sample(file), v); err != nil {
		panic(file + ": " + err.Error())
	}
}
