package bitrixfake

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	embedded "github.com/ingest-dev/ingest/internal/fakes/fixtures"
)

// The live feed, generated from the seed (research/bitrix.md §5.5, fixtures
// log.blogpost.get.valid.json, log.blogcomment.user.get.json; the server's
// socialnetwork/classes/general/rest.php). What is modelled:
//
//   - log.blogpost.get lists the published posts the webhook's user may see, by the feed entry's
//     last activity (a new comment moves a post to the top), newest first, 50 to a page with
//     start, or filtered by LOG_RIGHTS (SG<id>, U<id>, UA, DR<id>) or POST_ID; recipients are
//     not among a post's fields, and every post gives its author a right (U<author>);
//   - posts addressed only to users, the webhook's user not among them, are not shown to it;
//   - every UF_* field comes as the field's whole description with its value under VALUE;
//   - log.blogcomment.user.get lists one author's comments (USER_ID, honoured for
//     administrators only) by ascending id after FIRST_ID or descending before LAST_ID, LIMIT
//     100 by default and at most 1000, whatever post they are on; for any author other than the
//     caller the text comes back empty, so an author's own webhook (AddWebhook, webhooks.go)
//     reads that author's texts. Each row names its post in post_id (the blog
//     post, as the server code does) and in log_id (the post's feed entry, as the docs' sample).

var blogPostSample = embedded.ReadFile("bitrix/log.blogpost.get.valid.json")

// postCommentBase is where feed comments' ids begin (b_sonet_log_comment); a comment's blog
// comment id is postBlogCommentBase plus the same offset.
const (
	postCommentBase     = 300_000
	postBlogCommentBase = 40_000
	postLogBase         = 10_000
)

// post is a generated post.
type post struct {
	id, author int
	published  bool
	rights     []string
	date       time.Time
	comments   []postComment
	title      string
	text       string
	important  bool
	file       bool
}

// postComment is a comment on a post.
type postComment struct {
	id, blogID, author int
	date               time.Time
	text               string
	file               bool
}

// feedState is the posts of the portal.
type feedState struct {
	ids      []int
	byID     map[int]*post
	byAuthor map[int][]*postComment // comments by author, ascending id
	ufs      []field                // the template post's UF_* fields
}

func (p *Portal) initFeed() {
	s := &p.feed
	s.ids = generateIDs(p.opts.Posts, 7)
	s.byID = make(map[int]*post, len(s.ids))
	perPost := p.opts.PostComments
	if perPost <= 0 {
		perPost = 3
	}
	me := p.me()
	for _, id := range s.ids {
		r := p.rng(kindPost, id)
		user := func() int {
			if len(p.allUsers) == 0 {
				return me
			}
			return p.allUsers[r.IntN(len(p.allUsers))]
		}
		ps := &post{id: id, author: user(), published: r.IntN(40) != 0, title: pick(r, chatTopics),
			date: between(r, p.epoch().AddDate(9, 0, 0), 365*24*time.Hour), important: r.IntN(8) == 0, file: r.IntN(5) == 0}
		ps.text = pick(r, phrases)
		if r.IntN(4) == 0 {
			ps.text = p.userTag(user(), false) + ", " + ps.text + " [B]" + pick(r, phrases) + "[/B]"
		}
		ps.rights = []string{"U" + strconv.Itoa(ps.author)}
		switch roll := r.IntN(100); {
		case roll < 55:
			ps.rights = append(ps.rights, "UA")
		case roll < 75 && len(p.groups) > 0:
			ps.rights = append(ps.rights, "SG"+strconv.Itoa(p.groups[r.IntN(len(p.groups))]))
			if r.IntN(3) == 0 {
				ps.rights = append(ps.rights, "UA")
			}
		case roll < 90:
			for range 1 + r.IntN(3) {
				ps.rights = append(ps.rights, "U"+strconv.Itoa(user()))
			}
		default:
			ps.rights = append(ps.rights, "DR"+strconv.Itoa(1+r.IntN(40)))
		}
		slices.Sort(ps.rights)
		ps.rights = slices.Compact(ps.rights)
		for k := range r.IntN(2*perPost + 1) {
			c := postComment{id: postCommentBase + id*32 + k, blogID: postBlogCommentBase + id*32 + k, author: user(),
				date: ps.date.Add(time.Duration(k+1) * 3 * time.Hour), text: pick(r, phrases), file: r.IntN(6) == 0}
			if r.IntN(4) == 0 {
				c.author = me // the webhook's user comments too: its own text is readable
			}
			if r.IntN(5) == 0 {
				c.text = p.userTag(ps.author, false) + ", " + c.text
			}
			ps.comments = append(ps.comments, c)
		}
		s.byID[id] = ps
	}
	s.reindex()
	var sample struct {
		Result []json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(blogPostSample, &sample); err != nil || len(sample.Result) == 0 {
		panic(fmt.Sprintf("bitrixfake: embedded log.blogpost.get sample: %v", err))
	}
	var tmpl map[string]json.RawMessage
	_ = json.Unmarshal(sample.Result[0], &tmpl)
	for _, k := range objectKeys(sample.Result[0]) {
		if strings.HasPrefix(k, "UF_") {
			var v any
			_ = json.Unmarshal(tmpl[k], &v)
			s.ufs = append(s.ufs, field{k, v})
		}
	}
	p.handlers["log.blogpost.get"] = p.blogPostGet
	p.handlers["log.blogcomment.user.get"] = p.blogCommentUserGet
	p.handlers["user.admin"] = func(map[string]any) answer { return answer{result: p.callerAdmin(), cost: p.opts.CallCost} }
}

// visible says whether the caller sees a post: anything addressed beyond single users; a post to
// users only if it is one of them or the author.
func (p *Portal) postVisible(ps *post) bool {
	if !ps.published {
		return false
	}
	me := "U" + strconv.Itoa(p.caller())
	for _, r := range ps.rights {
		if !strings.HasPrefix(r, "U") || r == "UA" || r == me {
			return true
		}
	}
	return false
}

// logUpdate is when a post's feed entry was last active: its last comment, or its publication.
func (ps *post) logUpdate() time.Time {
	if len(ps.comments) > 0 {
		return ps.comments[len(ps.comments)-1].date
	}
	return ps.date
}

// postRow renders a post as log.blogpost.get does.
func (p *Portal) postRow(ps *post) object {
	hasProps := "N"
	if len(p.feed.ufs) > 0 {
		hasProps = "Y"
	}
	row := object{
		{"ID", strconv.Itoa(ps.id)},
		{"BLOG_ID", strconv.Itoa(100 + ps.author)},
		{"PUBLISH_STATUS", "P"},
		{"TITLE", ps.title},
		{"AUTHOR_ID", strconv.Itoa(ps.author)},
		{"ENABLE_COMMENTS", "Y"},
		{"NUM_COMMENTS", strconv.Itoa(len(ps.comments))},
		{"CODE", nil},
		{"MICRO", "N"},
		{"DETAIL_TEXT", ps.text},
		{"DATE_PUBLISH", p.isoDate(ps.date)},
		{"CATEGORY_ID", ""},
		{"HAS_SOCNET_ALL", yn(slices.Contains(ps.rights, "UA"))},
		{"HAS_TAGS", "N"},
		{"HAS_IMAGES", "N"},
		{"HAS_PROPS", hasProps},
		{"HAS_COMMENT_IMAGES", nil},
	}
	for _, f := range p.feed.ufs {
		uf, _ := f.value.(map[string]any)
		copied := object{}
		for _, k := range []string{"ID", "ENTITY_ID", "FIELD_NAME", "USER_TYPE_ID", "XML_ID", "SORT", "MULTIPLE", "MANDATORY",
			"SHOW_FILTER", "SHOW_IN_LIST", "EDIT_IN_LIST", "IS_SEARCHABLE", "SETTINGS", "EDIT_FORM_LABEL", "LIST_COLUMN_LABEL",
			"LIST_FILTER_LABEL", "ERROR_MESSAGE", "HELP_MESSAGE", "USER_TYPE", "VALUE", "ENTITY_VALUE_ID", "VALUE_EXISTS",
			"VALUE_RAW", "CUSTOM_DATA"} {
			if v, ok := uf[k]; ok {
				copied = append(copied, field{k, v})
			}
		}
		copied.set("ENTITY_VALUE_ID", ps.id)
		switch f.key {
		case "UF_BLOG_POST_IMPRTNT":
			if ps.important {
				copied.set("VALUE", "1")
			}
		case "UF_BLOG_POST_FILE":
			copied.set("VALUE", false)
			copied.set("VALUE_RAW", nil)
			if ps.file {
				copied.set("VALUE", []int{5000 + ps.id})
				copied.set("VALUE_RAW", fmt.Sprintf("a:1:{i:0;i:%d;}", 5000+ps.id))
			}
		}
		row = append(row, field{f.key, copied})
	}
	if ps.file {
		row = append(row, field{"FILES", []int{5000 + ps.id}})
	}
	return row
}

// blogPostGet is log.blogpost.get: POST_ID or LOG_RIGHTS, start (50 to a page, -1 for no count).
func (p *Portal) blogPostGet(params map[string]any) answer {
	var posts []*post
	rights, hasRights := param(params, "LOG_RIGHTS")
	want := map[string]bool{}
	for _, r := range listOf(rights) {
		want[strval(r)] = true
	}
	postID, _ := param(params, "POST_ID")
	for _, id := range p.feed.ids {
		ps := p.feed.byID[id]
		if !p.postVisible(ps) {
			continue
		}
		if intval(postID) > 0 && id != intval(postID) {
			continue
		}
		if hasRights && intval(postID) <= 0 && !slices.ContainsFunc(ps.rights, func(r string) bool { return want[r] }) {
			continue
		}
		posts = append(posts, ps)
	}
	sort.SliceStable(posts, func(i, j int) bool {
		a, b := posts[i].logUpdate(), posts[j].logUpdate()
		if a.Equal(b) {
			return posts[i].id > posts[j].id
		}
		return a.After(b)
	})
	start := startParam(params)
	from := max(start, 0)
	rows := []object{}
	for _, ps := range posts[min(from, len(posts)):min(from+pageSize, len(posts))] {
		row := p.postRow(ps)
		if p.opts.RealShapes {
			row = realPost(row)
		}
		rows = append(rows, row)
	}
	a := answer{result: rows, cost: p.opts.CallCost + time.Duration(len(rows))*p.opts.RowCost}
	if start >= 0 {
		total := len(posts)
		a.total = &total
		if next := from + pageSize; next < total {
			a.next = &next
		}
		a.cost += time.Duration(len(posts)) * p.opts.CountCost
	}
	return a
}

// blogCommentUserGet is log.blogcomment.user.get.
func (p *Portal) blogCommentUserGet(params map[string]any) answer {
	me := p.caller()
	user := me
	if v, ok := param(params, "USER_ID"); ok && intval(v) > 0 && p.callerAdmin() {
		user = intval(v)
	}
	limit := 100
	if v, ok := param(params, "LIMIT"); ok {
		limit = min(intval(v), 1000)
	}
	all := p.feed.byAuthor[user]
	var page []*postComment
	if v, ok := param(params, "FIRST_ID"); ok {
		first := intval(v)
		for _, c := range all {
			if c.id > first && len(page) < limit {
				page = append(page, c)
			}
		}
	} else {
		last := 0
		if v, ok := param(params, "LAST_ID"); ok {
			last = intval(v)
		}
		for i := len(all) - 1; i >= 0 && len(page) < limit; i-- {
			if last <= 0 || all[i].id < last {
				page = append(page, all[i])
			}
		}
	}
	comments := []object{}
	keys, files := []string{}, map[string]any{}
	for _, c := range page {
		postID := (c.blogID - postBlogCommentBase) / 32
		text := c.text
		if user != me {
			text = ""
		}
		attach := []any{}
		if c.file {
			d := 90000 + c.id
			attach = append(attach, d)
			keys = append(keys, strconv.Itoa(d))
			files[strconv.Itoa(d)] = object{{"id", d}, {"date", p.isoDate(c.date)}, {"type", "image"}, {"name", "diagram" + strconv.Itoa(d) + ".png"},
				{"size", 184320}, {"image", object{{"width", 1280}, {"height", 720}}}, {"authorId", c.author},
				{"authorName", p.displayName(c.author)}, {"urlPreview", "https://example.bitrix24.com/disk/showPreview/" + strconv.Itoa(d)},
				{"urlShow", "https://example.bitrix24.com/disk/showFile/" + strconv.Itoa(d)},
				{"urlDownload", "https://example.bitrix24.com/disk/downloadFile/" + strconv.Itoa(d)}}
		}
		comments = append(comments, object{{"id", c.id}, {"comment_id", c.blogID}, {"post_id", postID},
			{"log_id", postLogBase + postID}, {"date", p.isoDate(c.date)}, {"text", text}, {"attach", attach}})
	}
	return answer{result: object{{"comments", comments}, {"files", phpArray(keys, files)}},
		cost: p.opts.CallCost + time.Duration(len(comments))*p.opts.RowCost}
}

// PostInfo describes a generated post as tests need to know it.
type PostInfo struct {
	ID, Author int
	// Visible says whether log.blogpost.get shows it to the webhook's user.
	Visible bool
	// Rights are the post's recipient codes, its author's own U<id> included.
	Rights []string
	// Comments are the ids of its comments (blog comment ids) and their authors.
	Comments, CommentAuthors []int
}

// PostInfos returns every post of the portal, ascending by id.
func (p *Portal) PostInfos() []PostInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PostInfo, 0, len(p.feed.ids))
	for _, id := range p.feed.ids {
		ps := p.feed.byID[id]
		info := PostInfo{ID: id, Author: ps.author, Visible: p.postVisible(ps), Rights: slices.Clone(ps.rights)}
		for _, c := range ps.comments {
			info.Comments = append(info.Comments, c.blogID)
			info.CommentAuthors = append(info.CommentAuthors, c.author)
		}
		out = append(out, info)
	}
	return out
}
