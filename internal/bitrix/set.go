package bitrix

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// SetStats sums up a set, per entity (groups and their memberships are counted apart).
type SetStats map[string]*SetCounts

// SetCounts counts what one set did to one entity's records.
type SetCounts struct {
	// Imported moved to IMPORT_OK; Retry to ERROR_RETRY; Failed to IMPORT_ERR.
	Imported, Retry, Failed int
	// Retries counts the attempts made on ERROR_RETRY records.
	Retries int
	// Waiting counts memberships left in NEW because their group is not imported.
	Waiting int64
}

func (s SetStats) of(entity string) *SetCounts {
	if s[entity] == nil {
		s[entity] = &SetCounts{}
	}
	return s[entity]
}

// PrerequisiteError is returned when a phase may not start yet (seed 001 "Prerequisites").
type PrerequisiteError struct {
	Phase, Entity string // what was refused: "set", "groups"
	Needs         string // the entity that must be ready first
	Reason        string
}

func (e *PrerequisiteError) Error() string {
	return fmt.Sprintf("%s %s refused: %s must be imported and verified first: %s", e.Entity, e.Phase, e.Needs, e.Reason)
}

// ErrPrerequisite is wrapped by every PrerequisiteError.
var ErrPrerequisite = errors.New("prerequisite not met")

func (e *PrerequisiteError) Unwrap() error { return ErrPrerequisite }

// Set imports the entity's NEW and ERROR_RETRY records through the target (seed 000
// "<entity>-set"), in batches of the entity's size, in id order. Each record ends the run in
// IMPORT_OK (its target id in bitrix_id_map), IMPORT_ERR (a permanent failure, an unresolvable
// reference, an unreadable date, or retries used up), or, if the run is stopped, where it was.
// Retryable failures are retried in the same run on the retry schedule: Set waits until the
// last ERROR_RETRY record is settled.
//
// groups set refuses to start until users are verified; each batch of groups is followed by
// the memberships of the groups it imported, in batches of up to 100.
func (e *Engine) Set(ctx context.Context, entity string) (SetStats, error) {
	k, err := lookup(entity)
	if err != nil {
		return nil, err
	}
	if k.name == Groups {
		if err := e.requireVerified(ctx, k.name, "set", Users); err != nil {
			return nil, err
		}
	}
	defer e.Metrics.Phase(k.name, "set")()
	s := &setter{e: e, st: SetStats{}, start: e.now()}
	if err := s.countBacklog(ctx, k.name); err != nil {
		return s.st, err
	}
	e.Log.Info("set started", "entity", k.name, "backlog", s.backlog)

	// Fresh records first, in id order.
	for after := int64(0); ; {
		ids, err := Machine.Pick(ctx, e.Pool, status.PickParams{Statuses: []status.Status{New}, After: after, Limit: k.batch, ScopeValue: k.name})
		if err != nil || len(ids) == 0 {
			if err != nil {
				return s.st, err
			}
			break
		}
		if err := s.batch(ctx, k, ids); err != nil {
			return s.st, err
		}
		after = ids[len(ids)-1]
	}
	if k.name == Groups {
		if err := s.sweepMembers(ctx); err != nil {
			return s.st, err
		}
	}
	if err := s.retries(ctx, k); err != nil {
		return s.st, err
	}
	if k.name == Groups {
		if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM bitrix_records m WHERE m.entity = 'group_members'
AND m.status IN ('NEW', 'ERROR_RETRY')`).Scan(&s.st.of(GroupMembers).Waiting); err != nil {
			return s.st, fmt.Errorf("count waiting members: %w", err)
		}
		if w := s.st.of(GroupMembers).Waiting; w > 0 {
			e.Log.Warn("memberships wait for their group, which is not imported", "entity", GroupMembers, "count", w)
		}
	}
	for _, name := range []string{k.name, GroupMembers} {
		if c, ok := s.st[name]; ok {
			e.Log.Info("set done", "entity", name, "imported", c.Imported, "failed", c.Failed,
				"retry_pending", c.Retry, "retries", c.Retries, "waiting_for_group", c.Waiting)
		}
	}
	return s.st, nil
}

// requireVerified refuses a phase of entity until needs is verified.
func (e *Engine) requireVerified(ctx context.Context, entity, phase, needs string) error {
	inv, err := loadInventory(ctx, e.Pool, needs)
	if err != nil {
		return err
	}
	if inv.Verified {
		return nil
	}
	var pending int64
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM bitrix_records WHERE entity = $1 AND status <> 'IMPORT_OK'`,
		needs).Scan(&pending); err != nil {
		return fmt.Errorf("check %s: %w", needs, err)
	}
	var reason string
	switch {
	case inv.Pass == 0:
		reason = fmt.Sprintf("%s were never read; run `ingest bitrix %s run`", needs, needs)
	case pending > 0:
		reason = fmt.Sprintf("%d %s records are not IMPORT_OK; run `ingest bitrix %s set` then `ingest bitrix %s verify`",
			pending, needs, needs, needs)
	case inv.LastVerify != nil && !inv.LastVerify.Clean():
		reason = fmt.Sprintf("the last %s verify found problems (%s); fix them and run `ingest bitrix %s verify`",
			needs, inv.LastVerify.Summary(), needs)
	default:
		reason = fmt.Sprintf("%s changed or were never verified since their import; run `ingest bitrix %s verify`", needs, needs)
	}
	return &PrerequisiteError{Phase: phase, Entity: entity, Needs: needs, Reason: reason}
}

// setter carries one Set call's counters.
type setter struct {
	e       *Engine
	st      SetStats
	start   time.Time
	backlog int64
	done    int64
}

func (s *setter) countBacklog(ctx context.Context, entity string) error {
	entities := []string{entity}
	if entity == Groups {
		entities = append(entities, GroupMembers)
	}
	err := s.e.Pool.QueryRow(ctx, `SELECT count(*) FROM bitrix_records WHERE entity = ANY($1) AND status IN ('NEW', 'ERROR_RETRY')`,
		entities).Scan(&s.backlog)
	if err != nil {
		return fmt.Errorf("count %s backlog: %w", entity, err)
	}
	return nil
}

// batch imports the records with the given ids; for groups, the memberships of the groups it
// imported follow at once.
func (s *setter) batch(ctx context.Context, k kind, ids []int64) error {
	recs, err := loadRecords(ctx, s.e.Pool, ids)
	if err != nil {
		return err
	}
	imported, err := s.importRecords(ctx, k, recs)
	if err != nil {
		return err
	}
	if k.name != Groups || len(imported) == 0 {
		return nil
	}
	members := kinds[GroupMembers]
	for after := int64(0); ; {
		var ids []int64
		rows, err := s.e.Pool.Query(ctx, `SELECT id FROM bitrix_records WHERE entity = 'group_members'
AND parent_source_id = ANY($1) AND status = 'NEW' AND id > $2 ORDER BY id LIMIT $3`, imported, after, members.batch)
		if err == nil {
			ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		}
		if err != nil {
			return fmt.Errorf("pick members of groups %v: %w", imported, err)
		}
		if len(ids) == 0 {
			return nil
		}
		if err := s.members(ctx, ids); err != nil {
			return err
		}
		after = ids[len(ids)-1]
	}
}

func (s *setter) members(ctx context.Context, ids []int64) error {
	recs, err := loadRecords(ctx, s.e.Pool, ids)
	if err != nil {
		return err
	}
	_, err = s.importRecords(ctx, kinds[GroupMembers], recs)
	return err
}

// sweepMembers imports the NEW memberships of groups imported before this run (or whose
// members were added by a later get).
func (s *setter) sweepMembers(ctx context.Context) error {
	batch := kinds[GroupMembers].batch
	for after := int64(0); ; {
		var ids []int64
		rows, err := s.e.Pool.Query(ctx, `SELECT m.id FROM bitrix_records m WHERE m.entity = 'group_members'
AND m.status = 'NEW' AND m.id > $1 AND EXISTS (SELECT 1 FROM bitrix_records g
    WHERE g.entity = 'groups' AND g.source_id = m.parent_source_id AND g.status = 'IMPORT_OK')
ORDER BY m.id LIMIT $2`, after, batch)
		if err == nil {
			ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		}
		if err != nil {
			return fmt.Errorf("pick members of imported groups: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		if err := s.members(ctx, ids); err != nil {
			return err
		}
		after = ids[len(ids)-1]
	}
}

// retries works off ERROR_RETRY records as they come due, waiting for the next one, until none
// is left (each ends in IMPORT_OK or, after the last retry, IMPORT_ERR).
func (s *setter) retries(ctx context.Context, k kind) error {
	entities := []kind{k}
	if k.name == Groups {
		entities = append(entities, kinds[GroupMembers])
	}
	for {
		worked := false
		for _, ek := range entities {
			ids, err := dueRetries(ctx, s.e.Pool, ek.name, s.e.now(), ek.batch)
			if err != nil {
				return err
			}
			if len(ids) == 0 {
				continue
			}
			worked = true
			if ek.name == GroupMembers {
				err = s.members(ctx, ids)
			} else {
				err = s.batch(ctx, ek, ids)
			}
			if err != nil {
				return err
			}
		}
		if worked {
			continue
		}
		next, ok, err := nextRetry(ctx, s.e.Pool, entities)
		if err != nil || !ok {
			return err
		}
		wait := next.Sub(s.e.now())
		s.e.Log.Debug("waiting for the next retry", "entity", k.name, "wait", wait)
		if err := s.e.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// dueRetries returns up to limit ERROR_RETRY records of the entity whose retry is due.
func dueRetries(ctx context.Context, db status.DB, entity string, now time.Time, limit int) ([]int64, error) {
	rows, err := db.Query(ctx, `SELECT id FROM bitrix_records WHERE entity = $1 AND status = 'ERROR_RETRY'
AND coalesce(next_attempt_at, '-infinity') <= $2 ORDER BY id LIMIT $3`, entity, now, limit)
	if err != nil {
		return nil, fmt.Errorf("pick %s retries: %w", entity, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("pick %s retries: %w", entity, err)
	}
	return ids, nil
}

// nextRetry returns when the next ERROR_RETRY record of the entities comes due; ok is false when
// there is none.
func nextRetry(ctx context.Context, db status.DB, entities []kind) (time.Time, bool, error) {
	names := make([]string, len(entities))
	for i, k := range entities {
		names[i] = k.name
	}
	var next *time.Time
	err := db.QueryRow(ctx, `SELECT min(coalesce(next_attempt_at, '-infinity')) FROM bitrix_records
WHERE entity = ANY($1) AND status = 'ERROR_RETRY'`, names).Scan(&next)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next retry of %v: %w", names, err)
	}
	if next == nil {
		return time.Time{}, false, nil
	}
	return *next, true, nil
}
