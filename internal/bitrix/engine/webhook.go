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
	resp, err := e.source.Call(ctx, "user.current", nil)
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
	resp, err := e.source.Call(ctx, "user.admin", nil)
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
