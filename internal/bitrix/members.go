package bitrix

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// maxCommandRetries bounds how often the commands of one batch that the portal refused for its
// operating-time limit are sent again (the client waits out the pause before each).
const maxCommandRetries = 11

// batchEach runs one read command per key in as few batches as possible and hands each answer
// to fn. Commands refused for the operating-time limit are sent again once the client's pause
// is over; any other command failure goes to onErr, which decides whether it stops everything.
func (e *Engine) batchEach(ctx context.Context, cmds []rest.Command, fn func(key string, r *rest.Response) error, onErr func(key string, err error) error) error {
	for len(cmds) > 0 {
		chunk := cmds[:min(len(cmds), rest.MaxBatch)]
		cmds = cmds[len(chunk):]
		for try := 0; len(chunk) > 0; try++ {
			br, err := e.Source.Batch(ctx, chunk, false)
			if err != nil {
				return err
			}
			var again []rest.Command
			for _, cmd := range chunk {
				r, err := br.Response(cmd.Key)
				switch {
				case rest.HasCode(err, rest.CodeOperationTimeLimit) && try < maxCommandRetries:
					again = append(again, cmd)
				case err != nil:
					if err := onErr(cmd.Key, err); err != nil {
						return err
					}
				default:
					if err := fn(cmd.Key, r); err != nil {
						return err
					}
				}
			}
			chunk = again
		}
	}
	return nil
}

// fetchMembers reads the memberships of the given groups: sonet_group.user.get returns every
// active member of one group at once (no paging), so one batch covers a page of 50 groups.
func (e *Engine) fetchMembers(ctx context.Context, groupIDs []string, zone *time.Location) ([]incoming, error) {
	cmds := make([]rest.Command, len(groupIDs))
	for i, id := range groupIDs {
		cmds[i] = rest.Command{Key: "g" + id, Method: "sonet_group.user.get", Params: map[string]any{"ID": id}}
	}
	var out []incoming
	members := kinds[GroupMembers]
	err := e.batchEach(ctx, cmds, func(key string, r *rest.Response) error {
		group := strings.TrimPrefix(key, "g")
		rows, err := r.Rows()
		if err != nil {
			return fmt.Errorf("members of group %s: %w", group, err)
		}
		for _, row := range rows {
			fields, err := fieldsOf(row)
			if err != nil {
				return fmt.Errorf("members of group %s: %w", group, err)
			}
			user := text(fields, "USER_ID")
			if user == "" {
				return fmt.Errorf("members of group %s: row without USER_ID: %.200s", group, row)
			}
			in, err := newIncoming(members, group+":"+user, group, row, fields, zone)
			if err != nil {
				return err
			}
			out = append(out, in)
		}
		return nil
	}, func(key string, err error) error {
		if isGroupGone(err) {
			// Deleted between the listing and this call: it has no members to migrate.
			e.Log.Warn("group disappeared while its members were read", "entity", GroupMembers,
				"group_id", strings.TrimPrefix(key, "g"), "error", err)
			return nil
		}
		return fmt.Errorf("members of group %s: %w", strings.TrimPrefix(key, "g"), err)
	})
	return out, err
}

// isGroupGone recognises sonet_group.user.get's answer for a group that does not exist (400 with
// an empty code: research/bitrix.md §5.2).
func isGroupGone(err error) bool {
	apiErr, ok := errors.AsType[*rest.APIError](err)
	return ok && (strings.Contains(apiErr.Description, "group not found") ||
		strings.Contains(apiErr.Description, "Wrong socialnetwork group ID"))
}

// pullUsers fetches the users that groups within test_limit refer to (owners and members) and
// that are not stored yet: seed 000 lets a limited get pull its dependencies in beyond the limit.
func (e *Engine) pullUsers(ctx context.Context, groups, members []incoming, zone *time.Location) ([]incoming, error) {
	var refs []string
	for _, g := range groups {
		fields, err := fieldsOf(g.payload)
		if err != nil {
			return nil, err
		}
		if owner := text(fields, "OWNER_ID"); owner != "" {
			refs = append(refs, owner)
		}
	}
	for _, m := range members {
		_, user, _ := strings.Cut(m.sourceID, ":")
		refs = append(refs, user)
	}
	slices.Sort(refs)
	refs = slices.Compact(refs)
	want, err := missing(ctx, e.Pool, Users, refs)
	if err != nil || len(want) == 0 {
		return nil, err
	}
	users := kinds[Users]
	var cmds []rest.Command
	for chunk := range slices.Chunk(want, rest.PageSize) {
		params := map[string]any{"ADMIN_MODE": true, "select": []string{"*", "UF_*"},
			"FILTER": map[string]any{"@ID": chunk}, "sort": "ID", "order": "ASC"}
		cmds = append(cmds, rest.Command{Key: fmt.Sprintf("u%d", len(cmds)), Method: "user.get", Params: params})
	}
	var out []incoming
	err = e.batchEach(ctx, cmds, func(_ string, r *rest.Response) error {
		rows, err := r.Rows()
		if err != nil {
			return fmt.Errorf("pull users: %w", err)
		}
		for _, row := range rows {
			fields, err := fieldsOf(row)
			if err != nil {
				return fmt.Errorf("pull users: %w", err)
			}
			in, err := newIncoming(users, text(fields, "ID"), "", row, fields, zone)
			if err != nil {
				return err
			}
			out = append(out, in)
		}
		return nil
	}, func(_ string, err error) error { return fmt.Errorf("pull users: %w", err) })
	if err == nil && len(out) > 0 {
		e.Log.Info("users pulled in beyond test_limit", "entity", Users, "referenced", len(want), "found", len(out))
	}
	return out, err
}
