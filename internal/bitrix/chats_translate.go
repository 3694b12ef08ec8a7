package bitrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// mentionPattern is a user mention in BB-code: [USER=503]Name[/USER], or [USER=503 REPLACE] in
// system messages. Group 1 is the user id.
var mentionPattern = regexp.MustCompile(`(?i)\[USER=(\d+)([^\]]*)\]`)

// UnmappedUsersError lists the users a chat or message refers to that have no target id: the
// record is failed with it, never imported half-mapped.
type UnmappedUsersError struct {
	Field string // participants, author_id, text, params.LIKE
	Users []string
}

func (e *UnmappedUsersError) Error() string {
	return fmt.Sprintf("%s: user(s) %s have no target id (not imported users)", e.Field, strings.Join(e.Users, ", "))
}

// chatUsers lists the users a chat refers to: its owner and participants.
func chatUsers(fields map[string]json.RawMessage) []string {
	row, err := decodeChatRow(engine.MustJSON(fields))
	if err != nil {
		return nil // the payload hook reports the undecodable chat
	}
	users := []string{strconv.FormatInt(row.Owner, 10)}
	for _, p := range row.Participants {
		users = append(users, strconv.FormatInt(p, 10))
	}
	return users
}

// chatGroup lists the workgroup a workgroup's chat belongs to.
func chatGroup(fields map[string]json.RawMessage) []string {
	if engine.Text(fields, "entity_type") != "SONET_GROUP" {
		return nil
	}
	return []string{engine.Text(fields, "entity_id")}
}

// messageUsers lists the users a message names: its author, the mentions in its text and the
// users who liked it.
func messageUsers(fields map[string]json.RawMessage) []string {
	users := []string{engine.Text(fields, "author_id")}
	var body string
	_ = json.Unmarshal(fields["text"], &body)
	for _, m := range mentionPattern.FindAllStringSubmatch(body, -1) {
		users = append(users, m[1])
	}
	return append(users, likes(fields["params"])...)
}

// likes returns the user ids in a message's params.LIKE.
func likes(params json.RawMessage) []string {
	var p struct {
		Like []rest.ID `json:"LIKE"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	out := make([]string, len(p.Like))
	for i, id := range p.Like {
		out[i] = id.String()
	}
	return out
}

// mapUsers translates user ids, returning the ones that have no target id.
func mapUsers(ids []string, m engine.IDMap) (mapped, missing []string) {
	mapped = make([]string, 0, len(ids))
	for _, id := range ids {
		if t, ok := m[id]; ok {
			mapped = append(mapped, t)
		} else if !slices.Contains(missing, id) {
			missing = append(missing, id)
		}
	}
	return mapped, missing
}

// chatPayload is what the target receives for a chat (docs/bitrix-chats.md): the chat with its
// owner, participants and workgroup as target ids and its creation date in ISO 8601 with the
// original offset. A chat that could not be read, whose participants are unknown, or that
// refers to anything without a target id gets an error instead.
func chatPayload(r engine.Record, rf *engine.Refs) (json.RawMessage, error) {
	row, err := decodeChatRow(r.Payload)
	if err != nil {
		return nil, err
	}
	switch {
	case row.Unreachable != nil:
		return nil, errors.New(refusal(row.Unreachable))
	case row.ParticipantsUnavailable != "":
		return nil, fmt.Errorf("participants unknown: %s", row.ParticipantsUnavailable)
	}
	ids := make([]string, len(row.Participants))
	for i, p := range row.Participants {
		ids[i] = strconv.FormatInt(p, 10)
	}
	participants, missing := mapUsers(ids, rf.Of(Users))
	if len(missing) > 0 {
		return nil, &UnmappedUsersError{Field: "participants", Users: missing}
	}
	out := map[string]any{
		"source_id":    row.ID,
		"type":         row.Type,
		"message_type": row.MessageType,
		"name":         row.Name,
		"owner_id":     nil,
		"entity_type":  row.EntityType,
		"entity_id":    row.EntityID,
		"date_create":  nil,
		"participants": participants,
	}
	if row.Owner != 0 {
		owner := strconv.FormatInt(row.Owner, 10)
		t, ok := rf.Of(Users)[owner]
		if !ok {
			return nil, &engine.UnresolvedError{Field: "owner", Entity: Users, SourceID: owner}
		}
		out["owner_id"] = t
	}
	if row.EntityType == "SONET_GROUP" {
		t, ok := rf.Of(Groups)[row.EntityID]
		if !ok {
			return nil, &engine.UnresolvedError{Field: "entity_id", Entity: Groups, SourceID: row.EntityID}
		}
		out["entity_id"] = t
	}
	if d, ok := r.Dates["date_create"]; ok {
		if local, ok := d.Local(); ok {
			out["date_create"] = local
		}
	}
	return engine.MustJSON(out), nil
}

// messagePayload is what the target receives for a message (docs/bitrix-chats.md): its chat,
// author, the users mentioned in its BB-code text and those in params.LIKE as target ids; a
// system message (author 0) has no author and system true; params and the files' metadata as
// the portal sent them; edited says whether the message was edited.
func messagePayload(r engine.Record, rf *engine.Refs) (json.RawMessage, error) {
	fields, err := engine.FieldsOf(r.Payload)
	if err != nil {
		return nil, err
	}
	chat, ok := rf.Of(Chats)[r.ParentSourceID]
	if !ok {
		return nil, &engine.UnresolvedError{Field: "chat_id", Entity: Chats, SourceID: r.ParentSourceID}
	}
	author := engine.Text(fields, "author_id")
	system := author == "" || author == "0"
	var authorID any
	if !system {
		t, ok := rf.Of(Users)[author]
		if !ok {
			return nil, &UnmappedUsersError{Field: "author_id", Users: []string{author}}
		}
		authorID = t
	}
	var body string
	if err := json.Unmarshal(fields["text"], &body); err != nil && len(fields["text"]) > 0 {
		return nil, fmt.Errorf("text is not a string: %.100s", fields["text"])
	}
	var missing []string
	body = mentionPattern.ReplaceAllStringFunc(body, func(tag string) string {
		m := mentionPattern.FindStringSubmatch(tag)
		t, ok := rf.Of(Users)[m[1]]
		if !ok {
			missing = append(missing, m[1])
			return tag
		}
		return "[USER=" + t + m[2] + "]"
	})
	if len(missing) > 0 {
		return nil, &UnmappedUsersError{Field: "text", Users: missing}
	}
	params := map[string]json.RawMessage{}
	_ = json.Unmarshal(fields["params"], &params) // [] (PHP's empty array) leaves it empty
	if liked := likes(fields["params"]); len(liked) > 0 {
		mapped, missing := mapUsers(liked, rf.Of(Users))
		if len(missing) > 0 {
			return nil, &UnmappedUsersError{Field: "params.LIKE", Users: missing}
		}
		params["LIKE"] = engine.MustJSON(mapped)
	}
	var edited string
	_ = json.Unmarshal(params["IS_EDITED"], &edited)
	var date any
	if d, ok := r.Dates["date"]; ok {
		if local, ok := d.Local(); ok {
			date = local
		}
	}
	files := fields["files"]
	if len(files) == 0 {
		files = json.RawMessage("[]")
	}
	return engine.MustJSON(map[string]any{
		"source_id": fields["id"],
		"chat_id":   chat,
		"author_id": authorID,
		"system":    system,
		"date":      date,
		"text":      body,
		"params":    params,
		"files":     files,
		"uuid":      fields["uuid"],
		"edited":    edited == "Y",
	}), nil
}
