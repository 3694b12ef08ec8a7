package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Some records can be read but not migrated: the portal withholds what they are made of (a text it
// sends empty, a conversation the webhook's user is not in, a list of items it refuses). A lister keeps such a record anyway, so that nothing is
// dropped silently, with the reason under unreachableKey in its payload. Storing it moves it from
// NEW to IMPORT_ERR with that reason; set never imports it (payloadFor refuses it), and verify
// lists it by its portal id with the reason, apart from the problems: it is a known limit of what
// the REST API gives, not a failure of the migration.

// UnreachableKey is the payload field that holds why a record cannot be migrated.
const UnreachableKey = "_unreachable"

// unreachableReason returns why a record cannot be migrated, or "" when it can.
func unreachableReason(payload json.RawMessage) string {
	fields, err := FieldsOf(payload)
	if err != nil {
		return ""
	}
	// A stub of a record Postgres refused (textclean.go) is no more importable.
	return cmp.Or(Text(fields, UnreachableKey), Text(fields, unstorableKey))
}

// MarkUnreachable returns fields with the reason the record cannot be migrated.
func MarkUnreachable(fields map[string]json.RawMessage, reason string) map[string]json.RawMessage {
	fields[UnreachableKey] = MustJSON(reason)
	return fields
}

// listUnreachable adds the entity's records that cannot be migrated to the report, by portal id
// with the reason (up to maxListed; the count is exact).
func (e *Engine) listUnreachable(ctx context.Context, ent *Entity, r *VerifyReport) error {
	issues, err := e.store().unreachableOf(ctx, ent.Name)
	if err != nil {
		return fmt.Errorf("list unreachable %s: %w", ent.Name, err)
	}
	if len(issues) == 0 {
		return nil
	}
	if r.UnreachableBy == nil {
		r.UnreachableBy = map[string]int{}
	}
	r.UnreachableBy[ent.Name] += len(issues)
	r.UnreachableCount += len(issues)
	for _, i := range issues {
		if len(r.Unreachable) < MaxListed {
			r.Unreachable = append(r.Unreachable, i)
		}
	}
	return nil
}

// Unreachable is the portal's refusal to show a record to the webhook's user: the method and
// the portal's error. HTTPStatus is 0 when the refusal came inside a batch, whose answer is a 200
// (the portal's own status for it is 403). The entity that meets it says in words what it means.
type Unreachable struct {
	Method      string `json:"method"`
	HTTPStatus  int    `json:"http_status,omitempty"`
	Code        string `json:"code"`
	Description string `json:"description"`
}

// UnreachableFrom turns a refusal of the portal into an Unreachable, if it is one: ACCESS_ERROR
// (403), what the portal answers to a webhook's user that may not see a record.
func UnreachableFrom(method string, err error) (*Unreachable, bool) {
	if !rest.HasCode(err, "ACCESS_ERROR") {
		return nil, false
	}
	u := &Unreachable{Method: method, Code: "ACCESS_ERROR"}
	if api, ok := errors.AsType[*rest.APIError](err); ok {
		u.HTTPStatus, u.Code, u.Description = api.HTTPStatus, api.Code, api.Description
	}
	return u, true
}
