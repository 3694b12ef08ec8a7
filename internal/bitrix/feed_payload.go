package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// What the target receives for the live feed (docs/target-import-api.md, "Live feed").

// postPayload is a post as the portal sent it, with its author and the users its title and
// text mention as target ids, every UF_* field reduced to its value (the portal sends each as its
// whole field description), its date in the original offset, and the comment counters left out.
func postPayload(ent *engine.Entity, r engine.Record, rf *engine.Refs) (json.RawMessage, error) {
	fields, err := engine.FieldsOf(r.Payload)
	if err != nil {
		return nil, err
	}
	engine.LocalDates(fields, r.Dates)
	for _, k := range ent.Volatile {
		delete(fields, k)
	}
	for k, v := range fields {
		if strings.HasPrefix(k, "UF_") {
			fields[k] = ufValue(v)
		}
	}
	if err := engine.TranslatePlain(ent, r, fields, rf); err != nil {
		return nil, err
	}
	if err := translateTextFields(fields, rf.Of(Users), "TITLE", "DETAIL_TEXT"); err != nil {
		return nil, err
	}
	return engine.MustJSON(fields), nil
}

// ufValue is the value of a custom field as log.blogpost.get sends it: an object describing the
// field, its value under VALUE.
func ufValue(raw json.RawMessage) json.RawMessage {
	f, err := engine.FieldsOf(raw)
	if err != nil {
		return raw
	}
	if v, ok := f["VALUE"]; ok {
		return v
	}
	return raw
}

// recipientPayload is one proven recipient of a post: all employees, a workgroup or a user, the
// post and the group or user as target ids.
func recipientPayload(r engine.Record, rf *engine.Refs) (json.RawMessage, error) {
	fields, err := engine.FieldsOf(r.Payload)
	if err != nil {
		return nil, err
	}
	post, ok := rf.Target(Feed, r.ParentSourceID)
	if !ok {
		return nil, &engine.UnresolvedError{Field: "post_id", Entity: Feed, SourceID: r.ParentSourceID}
	}
	out := map[string]any{"post_id": post, "type": "", "group_id": nil, "user_id": nil}
	code := engine.Text(fields, "code")
	switch {
	case code == "UA":
		out["type"] = "all_users"
	case len(audienceID(code, "SG")) == 1:
		g := audienceID(code, "SG")[0]
		t, ok := rf.Target(Groups, g)
		if !ok {
			return nil, &engine.UnresolvedError{Field: "group_id", Entity: Groups, SourceID: g}
		}
		out["type"], out["group_id"] = "group", t
	case len(audienceID(code, "U")) == 1:
		u := audienceID(code, "U")[0]
		t, ok := rf.Target(Users, u)
		if !ok {
			return nil, &UnmappedUsersError{Field: "user_id", Users: []string{u}}
		}
		out["type"], out["user_id"] = "user", t
	default:
		return nil, fmt.Errorf("recipient code %q is not UA, SG<id> or U<id>", code)
	}
	return engine.MustJSON(out), nil
}

// commentPayload is a feed comment: its post and author as target ids, the users its BB-code text
// mentions too, its date in the original offset, the ids of its attachments and their files'
// metadata. One whose text the portal withheld never gets here (payloadFor refuses it).
func commentPayload(r engine.Record, rf *engine.Refs) (json.RawMessage, error) {
	fields, err := engine.FieldsOf(r.Payload)
	if err != nil {
		return nil, err
	}
	post, ok := rf.Target(Feed, r.ParentSourceID)
	if !ok {
		return nil, &engine.UnresolvedError{Field: "post_id", Entity: Feed, SourceID: r.ParentSourceID}
	}
	author := engine.Text(fields, "author_id")
	authorID, ok := rf.Of(Users)[author]
	if !ok {
		return nil, &UnmappedUsersError{Field: "author_id", Users: []string{author}}
	}
	engine.LocalDates(fields, r.Dates)
	if err := translateTextFields(fields, rf.Of(Users), "text"); err != nil {
		return nil, err
	}
	attach := fields["attach"]
	if engine.IsEmptyValue(attach) {
		attach = json.RawMessage("[]")
	}
	return engine.MustJSON(map[string]any{
		"post_id":    post,
		"author_id":  authorID,
		"comment_id": fields["comment_id"],
		"date":       fields["date"],
		"text":       fields["text"],
		"attach":     attach,
		"files":      fields["files"],
	}), nil
}

// verifyFeed adds the feed's own figures to verify: the recipients proven by kind, the posts no
// audience listing named (their audience is unknown: departments, or users the migration did not
// read), and the comments whose text the portal withheld.
func verifyFeed(ctx context.Context, e engine.Env, _ *engine.Entity, r *engine.VerifyReport) error {
	if r.Details == nil {
		r.Details = map[string]int64{}
	}
	codes, err := e.Store().FieldValues(ctx, FeedRecipients, "code")
	if err != nil {
		return fmt.Errorf("verify feed recipients: %w", err)
	}
	for _, c := range codes {
		switch {
		case c.Value == "UA":
			r.Details["recipients_all_users"]++
		case strings.HasPrefix(c.Value, "SG"):
			r.Details["recipients_groups"]++
		default:
			r.Details["recipients_users"]++
		}
	}
	n, _, err := e.Store().CountWithField(ctx, FeedComments, engine.UnreachableKey)
	if err != nil {
		return fmt.Errorf("verify feed comments: %w", err)
	}
	r.Details["comments_not_migratable"] = n
	unknown, err := e.Store().Childless(ctx, Feed, FeedRecipients)
	if err != nil {
		return fmt.Errorf("verify feed audience: %w", err)
	}
	r.Details["posts_without_proven_audience"] = int64(len(unknown))
	if len(unknown) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("posts whose audience no listing proved (addressed to departments or to "+
			"users not read; imported with their author's access only): %s", clipList(unknown)))
	}
	return nil
}
