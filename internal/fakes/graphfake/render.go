package graphfake

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// The fields each node type answers (Meta's IG User, IG Media, IG Comment references); asking
// for any other is the platform's (#100) error. Business discovery answers fewer.
var (
	userFields          = []string{"id", "ig_id", "username", "name", "biography", "website", "profile_picture_url", "followers_count", "follows_count", "media_count", "media", "stories", "business_discovery"}
	discoveryUserFields = []string{"id", "ig_id", "username", "name", "biography", "website", "profile_picture_url", "followers_count", "follows_count", "media_count", "media"}
	mediaFields         = []string{"id", "ig_id", "caption", "comments_count", "like_count", "is_comment_enabled", "is_shared_to_feed", "media_product_type", "media_type", "media_url", "owner", "permalink", "shortcode", "thumbnail_url", "timestamp", "username", "children", "comments"}
	discoveryMediaField = []string{"id", "caption", "comments_count", "like_count", "media_product_type", "media_type", "media_url", "permalink", "timestamp", "username", "children"}
	childFields         = []string{"id", "media_type", "media_url", "permalink", "shortcode", "thumbnail_url", "timestamp", "username"}
	commentFields       = []string{"id", "text", "timestamp", "username", "like_count", "hidden", "from", "parent_id", "media", "replies", "user"}
)

// timeLayout is the platform's timestamp: ISO 8601 with a colon-less offset, always +0000.
const timeLayout = "2006-01-02T15:04:05-0700"

func stamp(t time.Time) string { return t.UTC().Format(timeLayout) }

// view is how a node is being looked at: by its owner's token, or through business discovery.
type view struct {
	discovery bool
	token     string // for paging links
	rng       *rand.Rand
}

func checkFields(fs []field, allowed []string, nodeType string) *apiError {
	for _, f := range fs {
		if !slices.Contains(allowed, f.name) {
			if nodeType == "BusinessDiscoveryMedia" || nodeType == "BusinessDiscoveryUser" {
				return errBadRequest(100, 0, "(#100) Please read documentation for supported fields.")
			}
			return errBadRequest(100, 0, fmt.Sprintf("(#100) Tried accessing nonexisting field (%s) on node type (%s)", f.name, nodeType))
		}
	}
	return nil
}

// cdnURL is a media URL the way the CDN hands them out: signed parameters that change on every
// call (research/social.md §1.2), so a URL can never identify media.
func (v view) cdnURL(m *media, thumb bool) string {
	host := "scontent-gmp1-1.cdninstagram.com"
	ext, kind := "jpg", "t51.29350-15"
	if m.mediaType == "VIDEO" && !thumb {
		host, ext, kind = "video-gmp1-1.cdninstagram.com", "mp4", "t50.2886-16"
	}
	u := fmt.Sprintf("https://%s/v/%s/%s_n.%s?_nc_cat=%d&ccb=1-5&_nc_sid=8ae9d6&_nc_ohc=%s&_nc_ht=%s&oh=%x&oe=%X",
		host, kind, m.id, ext, 100+v.rng.IntN(12), randText(v.rng, 11), host, v.rng.Uint64(), v.rng.Uint32())
	if ext == "mp4" {
		u += "&_nc_rid=" + randText(v.rng, 10)
	}
	return u
}

func randText(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = shortcodeChars[rng.IntN(len(shortcodeChars))]
	}
	return string(b)
}

func permalink(m *media) string {
	switch m.productType {
	case "STORY":
		return fmt.Sprintf("https://instagram.com/stories/%s/%s", m.owner.username, m.id)
	case "REELS":
		return "https://www.instagram.com/reel/" + m.shortcode + "/"
	}
	return "https://www.instagram.com/p/" + m.shortcode + "/"
}

func (s *Server) renderUser(a *account, fs []field, v view, path string, q url.Values) (obj, *apiError) {
	allowed, nodeType := userFields, "IGUser"
	if v.discovery {
		allowed, nodeType = discoveryUserFields, "BusinessDiscoveryUser"
	}
	if err := checkFields(fs, allowed, nodeType); err != nil {
		return nil, err
	}
	var o obj
	hasID := false
	for _, f := range fs {
		switch f.name {
		case "id":
			o.add("id", a.id)
			hasID = true
		case "ig_id":
			n, _ := strconv.ParseUint(a.id[len(a.id)-10:], 10, 64)
			o.add("ig_id", n)
		case "username":
			o.add("username", a.username)
		case "name":
			o.add("name", a.name)
		case "biography":
			o.add("biography", a.bio)
		case "website":
			if a.website != "" {
				o.add("website", a.website)
			}
		case "profile_picture_url":
			o.add("profile_picture_url", fmt.Sprintf("https://scontent-gmp1-1.xx.fbcdn.net/v/t51.2885-15/%s_n.jpg?_nc_cat=105&ccb=1-%d&_nc_sid=86c713&oh=%x", a.id, 3+v.rng.IntN(3), v.rng.Uint64()))
		case "followers_count":
			o.add("followers_count", a.followers)
		case "follows_count":
			o.add("follows_count", a.follows)
		case "media_count":
			o.add("media_count", len(live(a.media)))
		case "media":
			e, err := s.mediaEdge(a, f, v, path, q)
			if err != nil {
				return nil, err
			}
			o.add("media", e)
		case "stories":
			if v.discovery {
				return nil, errBadRequest(10, 0, "(#10) Application does not have permission for this action")
			}
			e, err := s.storiesEdge(a, f.sub, v)
			if err != nil {
				return nil, err
			}
			o.add("stories", e)
		case "business_discovery":
			return nil, errBadRequest(100, 0, "(#100) business_discovery cannot be nested")
		}
	}
	if !hasID {
		o.add("id", a.id)
	}
	return o, nil
}

func live(ms []*media) []*media {
	out := make([]*media, 0, len(ms))
	for _, m := range ms {
		if !m.deleted {
			out = append(out, m)
		}
	}
	return out
}

func (s *Server) renderMedia(m *media, fs []field, v view, path string) (obj, *apiError) {
	allowed, nodeType := mediaFields, "IGMedia"
	switch {
	case m.parent != nil:
		allowed = childFields
	case v.discovery:
		allowed, nodeType = discoveryMediaField, "BusinessDiscoveryMedia"
	}
	if err := checkFields(fs, allowed, nodeType); err != nil {
		return nil, err
	}
	var o obj
	for _, f := range fs {
		switch f.name {
		case "id":
			o.add("id", m.id)
		case "ig_id":
			o.add("ig_id", m.id[3:])
		case "caption":
			switch {
			case m.rawCaption != nil:
				o.add("caption", m.rawCaption)
			case m.caption != "":
				o.add("caption", m.caption)
			}
		case "comments_count":
			o.add("comments_count", m.commentsCount())
		case "like_count":
			// Omitted through business discovery when the owner hides like counts (v11.0+).
			if !(v.discovery && m.hideLikes) {
				o.add("like_count", m.likes)
			}
		case "is_comment_enabled":
			o.add("is_comment_enabled", m.commentsEnabled)
		case "is_shared_to_feed":
			if m.productType == "REELS" {
				o.add("is_shared_to_feed", true)
			}
		case "media_product_type":
			o.add("media_product_type", m.productType)
		case "media_type":
			o.add("media_type", m.mediaType)
		case "media_url":
			// Omitted for media holding copyrighted material (reel audio).
			if !m.copyrighted {
				o.add("media_url", v.cdnURL(m, false))
			}
		case "thumbnail_url":
			if m.mediaType == "VIDEO" {
				o.add("thumbnail_url", v.cdnURL(m, true))
			}
		case "owner":
			o.add("owner", obj{{"id", m.owner.id}})
		case "permalink":
			o.add("permalink", permalink(m))
		case "shortcode":
			o.add("shortcode", m.shortcode)
		case "timestamp":
			o.add("timestamp", stamp(m.ts))
		case "username":
			o.add("username", m.owner.username)
		case "children":
			if len(m.children) > 0 {
				var data []obj
				for _, c := range m.children {
					co, err := s.renderMedia(c, subOr(f.sub, "id"), v, path)
					if err != nil {
						return nil, err
					}
					data = append(data, co)
				}
				o.add("children", obj{{"data", data}})
			}
		case "comments":
			e, err := s.commentsEdge(m, f, v, path, nil)
			if err != nil {
				return nil, err
			}
			o.add("comments", e)
		}
	}
	return o, nil
}

func (s *Server) renderComment(c *comment, fs []field, v view, path string) (obj, *apiError) {
	if err := checkFields(fs, commentFields, "IGComment"); err != nil {
		return nil, err
	}
	var o obj
	for _, f := range fs {
		switch f.name {
		case "id":
			o.add("id", c.id)
		case "text":
			o.add("text", c.text)
		case "timestamp":
			o.add("timestamp", stamp(c.ts))
		case "username":
			o.add("username", c.username)
		case "like_count":
			o.add("like_count", c.likes)
		case "hidden":
			o.add("hidden", c.hidden)
		case "from":
			o.add("from", obj{{"id", c.fromID}, {"username", c.username}})
		case "parent_id":
			if c.parent != nil {
				o.add("parent_id", c.parent.id)
			}
		case "media":
			o.add("media", obj{{"id", c.media.id}, {"media_product_type", c.media.productType}})
		case "user":
			// Only returned when the app user wrote the comment; the fake's commenters are others.
		case "replies":
			if c.parent == nil {
				e, err := s.repliesEdge(c, f, v, path, nil)
				if err != nil {
					return nil, err
				}
				o.add("replies", e)
			}
		}
	}
	return o, nil
}

func subOr(fs []field, def ...string) []field {
	if len(fs) > 0 {
		return fs
	}
	out := make([]field, len(def))
	for i, d := range def {
		out[i] = field{name: d}
	}
	return out
}
