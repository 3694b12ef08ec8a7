package engine

import (
	"context"
	"fmt"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// webhookUser returns the id of the webhook's user (user.current), asked once per engine.
func (e *Engine) webhookUser(ctx context.Context) (string, error) {
	e.meOnce.Lock()
	defer e.meOnce.Unlock()
	if e.me != "" {
		return e.me, nil
	}
	resp, err := e.source.Call(ctx, methodUserCurrent, nil)
	if err != nil {
		return "", fmt.Errorf("learn the webhook's user: %w", err)
	}
	var u struct {
		ID rest.ID `json:"ID"`
	}
	if err := resp.Decode(&u); err != nil || u.ID == "" {
		return "", fmt.Errorf("learn the webhook's user: user.current answered %.100s", resp.Result)
	}
	e.me = u.ID.String()
	return e.me, nil
}

// webhookAdmin reports whether the webhook's user is an administrator (user.admin), asked once
// per engine. A portal that does not answer is taken to have given the administrator's webhook
// the docs ask for, with a warning naming the entity that asked.
func (e *Engine) webhookAdmin(ctx context.Context, entity string) bool {
	e.meOnce.Lock()
	defer e.meOnce.Unlock()
	if e.admin != nil {
		return *e.admin
	}
	resp, err := e.source.Call(ctx, methodUserAdmin, nil)
	admin := true
	if err == nil {
		err = resp.Decode(&admin)
	}
	if err != nil {
		e.log.Warn("user.admin did not answer; the webhook's user is taken for an administrator", "entity", entity, "error", err)
		admin = true
	}
	e.admin = &admin
	return admin
}

// The methods that say who the webhook's user is and whether it is an administrator: no
// parameters.
const (
	methodUserCurrent = "user.current"
	methodUserAdmin   = "user.admin"
)

// webhookCommands are the calls of webhookUser and webhookAdmin not answered yet, for a rerun's
// prefetch (prefetch.go): a pass that needs either asks it once, one request, which the prefetch
// folds into its batch (an answer no pass takes is dropped with the rest).
func (e *Engine) webhookCommands() []rest.Command {
	e.meOnce.Lock()
	defer e.meOnce.Unlock()
	var out []rest.Command
	if e.me == "" {
		out = append(out, rest.Command{Method: methodUserCurrent})
	}
	if e.admin == nil {
		out = append(out, rest.Command{Method: methodUserAdmin})
	}
	return out
}
