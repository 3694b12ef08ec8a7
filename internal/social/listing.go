package social

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/social/graph"
)

// Fields asked for, by field expansion, so that one call brings what would otherwise take one
// call per carousel child or per comment thread. Business discovery answers a smaller set (no
// shortcode, thumbnail_url, is_comment_enabled: "(#100) Please read documentation for supported
// fields").
const (
	profileFields        = "id,username,name,biography,website,profile_picture_url,followers_count,follows_count,media_count"
	childFields          = "id,media_type,media_url,permalink,shortcode,thumbnail_url,timestamp"
	mediaFields          = "id,caption,comments_count,like_count,media_type,media_product_type,media_url,thumbnail_url,permalink,shortcode,timestamp,is_comment_enabled,children{" + childFields + "}"
	discoveryMediaFields = "id,caption,comments_count,like_count,media_type,media_product_type,media_url,permalink,timestamp,children{id,media_type,media_url}"
	storyFields          = "id,caption,media_type,media_product_type,media_url,thumbnail_url,permalink,shortcode,timestamp"
	replyFields          = "id,text,timestamp,username,from{id,username},like_count,hidden,parent_id"
	commentFields        = "id,text,timestamp,username,from{id,username},like_count,hidden,replies{" + replyFields + "}"
)

// Page sizes: Meta caps comments at 50 per query; 100 media per page is the most the platform
// is known to honour (research/social.md §1.3).
const (
	MediaPageSize   = 100
	CommentPageSize = 50
)

// listing describes one list the platform pages through: how to ask for a page, where the
// list is in the answer and how its end shows. The sync and normalize code loops over these
// descriptions; a new list (tagged media, say) is a new value.
type listing struct {
	// Endpoint labels the raw pages and the call counts.
	Endpoint string
	// Path is where the edge is in the answer (none: the answer is the edge).
	Path []string
	// Rule is how the last page shows.
	Rule graph.EndRule
	// Surface is where listed media appear ("feed", "story"); empty for comment lists.
	Surface string
	// request builds the request for subject (an IG user id, a username for business discovery,
	// a media or comment id) after cursor.
	request func(c creds, subject, cursor string) graph.Request
}

var (
	connectedMedia = &listing{Endpoint: "media", Rule: graph.EndWithoutNext, Surface: "feed",
		request: func(c creds, subject, cursor string) graph.Request {
			q := url.Values{"fields": {mediaFields}, "limit": {strconv.Itoa(MediaPageSize)}}
			if cursor != "" {
				q.Set("after", cursor)
			}
			return graph.Request{Endpoint: "media", Path: subject + "/media", Params: q, Token: c.token}
		}}
	// Business discovery never links a next page: the next request is rebuilt with
	// .after(cursor) on the media field, and the list ends when no after cursor comes back.
	discoveryMedia = &listing{Endpoint: "discovery_media", Path: []string{"business_discovery", "media"}, Rule: graph.EndWithoutAfter, Surface: "feed",
		request: func(c creds, subject, cursor string) graph.Request {
			media := "media.limit(" + strconv.Itoa(MediaPageSize) + ")"
			if cursor != "" {
				media += ".after(" + cursor + ")"
			}
			return graph.Request{Endpoint: "discovery_media", Path: c.node,
				Params: url.Values{"fields": {"business_discovery.username(" + subject + "){" + media + "{" + discoveryMediaFields + "}}"}}, Token: c.token}
		}}
	connectedStories = &listing{Endpoint: "stories", Rule: graph.EndWithoutNext, Surface: "story",
		request: func(c creds, subject, cursor string) graph.Request {
			q := url.Values{"fields": {storyFields}}
			if cursor != "" {
				q.Set("after", cursor)
			}
			return graph.Request{Endpoint: "stories", Path: subject + "/stories", Params: q, Token: c.token}
		}}
	comments = &listing{Endpoint: "comments", Rule: graph.EndWithoutNext,
		request: func(c creds, subject, cursor string) graph.Request {
			q := url.Values{"fields": {commentFields}, "limit": {strconv.Itoa(CommentPageSize)}}
			if cursor != "" {
				q.Set("after", cursor)
			}
			return graph.Request{Endpoint: "comments", Path: subject + "/comments", Params: q, Token: c.token}
		}}
	replies = &listing{Endpoint: "replies", Rule: graph.EndWithoutNext,
		request: func(c creds, subject, cursor string) graph.Request {
			q := url.Values{"fields": {replyFields}, "limit": {strconv.Itoa(CommentPageSize)}}
			if cursor != "" {
				q.Set("after", cursor)
			}
			return graph.Request{Endpoint: "replies", Path: subject + "/replies", Params: q, Token: c.token}
		}}
)

// listings finds a listing by the endpoint its raw pages are stored under.
var listings = map[string]*listing{}

func init() {
	for _, l := range []*listing{connectedMedia, discoveryMedia, connectedStories, comments, replies} {
		listings[l.Endpoint] = l
	}
}

// mediaListing is how an account's posts are listed.
func mediaListing(access string) *listing {
	if access == Discovery {
		return discoveryMedia
	}
	return connectedMedia
}

// repliesParent is the comment a raw replies page belongs to, from its request path.
func repliesParent(request string) string {
	id, _, _ := strings.Cut(request, "/")
	return id
}

// profileRequest asks for an account's profile: its own node, or business discovery.
func profileRequest(c creds, a *accountRow) graph.Request {
	if a.Access == Discovery {
		return graph.Request{Endpoint: "discovery_profile", Path: c.node,
			Params: url.Values{"fields": {"business_discovery.username(" + a.Username + "){" + profileFields + "}"}}, Token: c.token}
	}
	return graph.Request{Endpoint: "profile", Path: a.IGUserID, Params: url.Values{"fields": {profileFields}}, Token: c.token}
}
