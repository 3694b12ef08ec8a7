package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// The live feed (seed 000 stage 4.2, research/bitrix.md §5.5, docs/bitrix-feed-tasks.md): posts,
// the recipients of each post that can be proven, and the comments.
const (
	Feed           = "feed"
	FeedRecipients = "feed_recipients"
	FeedComments   = "feed_comments"
)

// noFeedFields is why fields-get and fields-set do nothing for the feed.
const noFeedFields = "feed posts have no userfield methods in the REST API: each post carries its UF_BLOG_POST_* values"

// commentsLimit is log.blogcomment.user.get's largest page per the docs; a shorter page ends an
// author's walk.
const commentsLimit = 100

// noFeedDelta is why every pass of the feed is full (docs/bitrix-delta.md).
const noFeedDelta = "log.blogpost.get filters by publication date (LOG_DATE_FROM) and feed entry id, not by " +
	"modification; comments are listed per author after an id and recipients per audience, neither by date: an edited " +
	"post, comment or audience is found only by reading them all"

func feedEntity() *engine.Entity {
	ent := &engine.Entity{
		Name:     Feed,
		Noun:     "posts",
		Help:     "live feed posts, their provable recipients and their comments (users and groups first; see docs/bitrix-feed-tasks.md)",
		Requires: []string{Users, Groups},
		// log.blogpost.get sorts by the feed entry's last activity, newest first, and takes no
		// other order or ID filter: offset pages are all it allows (docs/bitrix-feed-tasks.md).
		// log.blogpost.get takes POST_ID: a post a pass did not see is asked for before it counts as deleted.
		Lister: &engine.OffsetPages{List: rest.List{Method: "log.blogpost.get"},
			ByID: func(id string) map[string]any { return map[string]any{"POST_ID": id} }, Unfiltered: noFeedDelta},
		Refs: []engine.Ref{{Field: "AUTHOR_ID", Entity: Users, Name: "author"},
			{Field: "DETAIL_TEXT", Entity: Users, Name: "mentions", Values: func(f map[string]json.RawMessage) []string {
				return mentionsIn(f, "DETAIL_TEXT", "TITLE")
			}}},
		Dates: []string{"DATE_PUBLISH"},
		// A new comment changes these; the comments themselves are migrated.
		Volatile: []string{"NUM_COMMENTS", "HAS_COMMENT_IMAGES"},
		// A post's fields as log.blogpost.get lists them (CATEGORY_ID "" or null by version: null),
		// its Y/N flags as booleans, the attachment and poll ids of its custom fields as strings.
		Shapes: engine.Shapes{
			Fields: []string{"ID", "BLOG_ID", "PUBLISH_STATUS", "TITLE", "AUTHOR_ID", "ENABLE_COMMENTS", "CODE", "MICRO",
				"DETAIL_TEXT", "DATE_PUBLISH", "CATEGORY_ID", "HAS_SOCNET_ALL", "HAS_TAGS", "HAS_IMAGES", "HAS_PROPS"},
			Booleans: []string{"ENABLE_COMMENTS", "MICRO", "HAS_SOCNET_ALL", "HAS_TAGS", "HAS_IMAGES", "HAS_PROPS"},
			IDs:      []string{"BLOG_ID", "UF_BLOG_POST_FILE", "FILES", "UF_BLOG_POST_VOTE"},
		},
		Batch:    50,
		NoFields: noFeedFields,
		Verify:   verifyFeed,
	}
	ent.Payload = func(r engine.Record, rf *engine.Refs) (json.RawMessage, error) { return postPayload(ent, r, rf) }
	return ent
}

func feedRecipientsEntity() *engine.Entity {
	return &engine.Entity{
		Name:   FeedRecipients,
		Noun:   "recipients",
		Parent: Feed,
		// Recipients are not in a post; listing the posts addressed to each audience proves
		// which post went to whom: all employees, each workgroup, each user.
		Walk: &engine.KeyWalk{Method: "log.blogpost.get", Keys: audiences, Page: recipientsPage,
			Params: func(key, cursor string) any {
				start, _ := strconv.Atoi(cursor)
				return map[string]any{"LOG_RIGHTS": []string{key}, "start": start}
			},
			How: "log.blogpost.get LOG_RIGHTS per audience: UA, SG<group>, U<user>", PlanKeys: planAudiences},
		Refs: []engine.Ref{{Field: "code", Entity: Users, Name: "user", Values: func(f map[string]json.RawMessage) []string {
			return audienceID(engine.Text(f, "code"), "U")
		}}, {Field: "code", Entity: Groups, Name: "group", Values: func(f map[string]json.RawMessage) []string {
			return audienceID(engine.Text(f, "code"), "SG")
		}}},
		Batch:    100,
		NoFields: noFeedFields,
		Payload:  recipientPayload,
	}
}

func feedCommentsEntity() *engine.Entity {
	return &engine.Entity{
		Name:   FeedComments,
		Noun:   "comments",
		Parent: Feed,
		// No method lists a post's comments: log.blogcomment.user.get lists one author's, in
		// ascending id after FIRST_ID, and sends other authors' text empty to an administrator.
		Walk: &engine.KeyWalk{Method: "log.blogcomment.user.get", Keys: commentAuthors, Page: commentsPage, Params: func(key, cursor string) any {
			first, _ := strconv.ParseInt(cursor, 10, 64)
			return map[string]any{"USER_ID": key, "FIRST_ID": first, "LIMIT": commentsLimit}
		}, How: "log.blogcomment.user.get per author", PlanKeys: planCommentAuthors,
			// An author whose own webhook the run has (BITRIX_AUTHOR_WEBHOOKS) is read through
			// it: the portal sends an author's own comments with their text.
			AsUser: true},
		Refs: []engine.Ref{{Field: "author_id", Entity: Users, Name: "author", Values: func(f map[string]json.RawMessage) []string {
			return append([]string{engine.Text(f, "author_id")}, mentionsIn(f, "text")...)
		}}},
		Dates:    []string{"date"},
		Batch:    100,
		NoFields: noFeedFields,
		// A post's comments reach the target in the order they were written.
		Order:   engine.OrderByIDPart(2),
		Payload: commentPayload,
		Shapes:  engine.Shapes{IDs: []string{"comment_id"}},
		Advice:  withheldAuthors, // feed_authors.go
	}
}

// commentAuthors are the users whose comments to read: every user read, when the webhook's user
// is an administrator (user.admin); otherwise only itself, since the portal then ignores USER_ID
// and would answer its own comments for everyone's, and the authors whose own webhooks the run
// has.
func commentAuthors(ctx context.Context, e engine.Env) ([]string, error) {
	if !e.WebhookAdmin(ctx, FeedComments) {
		me, err := e.WebhookUser(ctx)
		if err != nil {
			return nil, err
		}
		e.Log().Warn("the webhook's user is not an administrator: only its own feed comments can be read, and those of the authors whose webhooks are given",
			"entity", FeedComments, "authors_with_webhooks", len(e.Delegates()))
		return append([]string{me}, slices.DeleteFunc(e.Delegates(), func(id string) bool { return id == me })...), nil
	}
	return e.Store().SourceIDs(ctx, Users)
}

// planCommentAuthors is how many authors commentAuthors will give once the users are read.
func planCommentAuthors(ctx context.Context, e engine.Env, planned map[string]int64) (int64, error) {
	if !e.WebhookAdmin(ctx, FeedComments) {
		return 1, nil
	}
	return planned[Users], nil
}

// planAudiences is how many audiences there will be once users and groups are read.
func planAudiences(_ context.Context, _ engine.Env, planned map[string]int64) (int64, error) {
	return 1 + planned[Groups] + planned[Users], nil
}

// audiences are the recipient codes whose posts prove an audience: all employees, every
// workgroup and every user read.
func audiences(ctx context.Context, e engine.Env) ([]string, error) {
	out := []string{"UA"}
	for _, a := range []struct{ entity, prefix string }{{Groups, "SG"}, {Users, "U"}} {
		ids, err := e.Store().SourceIDs(ctx, a.entity)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			out = append(out, a.prefix+id)
		}
	}
	return out, nil
}

// audienceID returns the id in a recipient code of the given kind ("SG5" -> 5).
func audienceID(code, prefix string) []string {
	id, ok := strings.CutPrefix(code, prefix)
	if !ok || code == "UA" || id == "" || strings.HasPrefix(id, "G") {
		return nil
	}
	return []string{id}
}

// recipientsPage makes the posts an audience listing returned into recipient records. The portal
// gives every author a right to their own post (U<author>): that is no recipient.
func recipientsPage(p engine.WalkPage) ([]engine.WalkRow, string, bool, error) {
	rows, err := p.Answer.Rows()
	if err != nil {
		return nil, "", false, err
	}
	var out []engine.WalkRow
	for _, row := range rows {
		f, err := engine.FieldsOf(row)
		if err != nil {
			return nil, "", false, err
		}
		post := engine.Text(f, "ID")
		if post == "" {
			return nil, "", false, fmt.Errorf("post without ID: %.200s", row)
		}
		if p.Key == "U"+engine.Text(f, "AUTHOR_ID") {
			continue
		}
		out = append(out, engine.WalkRow{SourceID: post + ":" + p.Key, Parent: post,
			Payload: engine.MustJSON(map[string]string{"post_id": post, "code": p.Key})})
	}
	if p.Answer.Next == nil || len(rows) == 0 {
		return out, "", true, nil
	}
	return out, strconv.Itoa(*p.Answer.Next), false, nil
}

// commentsPage makes one page of an author's comments into records. The author is the walk's key
// (the rows do not name it); a comment of another author than the webhook's user whose text came
// back empty had its text withheld, and is kept as a record that cannot be migrated.
func commentsPage(p engine.WalkPage) ([]engine.WalkRow, string, bool, error) {
	var page struct {
		Comments []map[string]json.RawMessage          `json:"comments"`
		Files    map[string]map[string]json.RawMessage `json:"files"`
	}
	if !engine.IsEmptyValue(p.Answer.Result) {
		if err := p.Answer.Decode(&page); err != nil {
			// files is [] when there are none (PHP's empty array)
			var bare struct {
				Comments []map[string]json.RawMessage `json:"comments"`
			}
			if err2 := p.Answer.Decode(&bare); err2 != nil {
				return nil, "", false, err
			}
			page.Comments = bare.Comments
		}
	}
	var out []engine.WalkRow
	last := p.Cursor
	for _, c := range page.Comments {
		id, comment := engine.Text(c, "id"), engine.Text(c, "comment_id")
		// The server puts the blog post's id in post_id; the docs' sample names log_id.
		post := engine.Text(c, "post_id")
		if post == "" {
			post = engine.Text(c, "log_id")
		}
		if id == "" || comment == "" || post == "" {
			return nil, "", false, fmt.Errorf("comment without id, comment_id or post: %.200s", engine.MustJSON(c))
		}
		if rest.CompareIDs(id, last) > 0 {
			last = id
		}
		var files []map[string]json.RawMessage
		for _, a := range idList(c["attach"]) {
			if meta, ok := page.Files[a]; ok {
				files = append(files, keepFields(meta, fileFields))
			}
		}
		c["author_id"] = engine.MustJSON(p.Key)
		c["files"] = engine.MustJSON(files)
		var body string
		_ = json.Unmarshal(c["text"], &body)
		if body == "" && p.Key != p.Me {
			engine.MarkUnreachable(c, textWithheld+": log.blogcomment.user.get sends other authors' comment text empty "+
				"to an administrator's webhook; it takes the author's own token (docs/bitrix-feed-tasks.md)")
		}
		out = append(out, engine.WalkRow{SourceID: post + ":" + comment, Parent: post, Payload: engine.MustJSON(c)})
	}
	return out, last, len(page.Comments) < commentsLimit, nil
}

// idList reads a list of ids sent as numbers or strings.
func idList(raw json.RawMessage) []string {
	var ids []rest.ID
	if json.Unmarshal(raw, &ids) != nil {
		return nil
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// keepFields returns the named fields of an object.
func keepFields(f map[string]json.RawMessage, names []string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, k := range names {
		if v, ok := f[k]; ok {
			out[k] = v
		}
	}
	return out
}
