package engine

import (
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/status"
)

// Record statuses, exactly as seed 000 names them.
const (
	// StatusNew: read from the source (or changed there since the last import), waiting for set.
	StatusNew status.Status = "NEW"
	// ImportOK: the target holds the record; its target id is in bitrix_id_map.
	ImportOK status.Status = "IMPORT_OK"
	// ImportErr: the import failed for good (a permanent error, an unresolvable reference, an
	// unreadable date, or retries used up); left alone until a person moves it back to NEW.
	ImportErr status.Status = "IMPORT_ERR"
	// ErrorRetry: a retryable failure; set tries again when its next attempt is due.
	ErrorRetry status.Status = "ERROR_RETRY"
	// DeletedAtSource: a complete get no longer saw the record, or its parent: the portal deleted
	// it. The target keeps it (BITRIX_DELETIONS=keep, verify lists it apart), or set is to remove it
	// (propagate). A later get that sees it again sends it back to NEW.
	DeletedAtSource status.Status = "DELETED_AT_SOURCE"
	// DeletedOnTarget: deleted at the source and removed from the target by set
	// (BITRIX_DELETIONS=propagate), its children with it: final, unless the portal shows it again.
	DeletedOnTarget status.Status = "DELETED_ON_TARGET"
)

// Machine is the record state machine of the Bitrix24 migration: one table for every entity,
// scoped by its entity column.
var Machine = &status.Machine{
	Name:     "bitrix",
	Table:    "bitrix_records",
	Scope:    "entity",
	Key:      "source_id",
	Statuses: []status.Status{StatusNew, ImportOK, ImportErr, ErrorRetry, DeletedAtSource, DeletedOnTarget},
	Auto: []status.Transition{
		{From: StatusNew, To: ImportOK}, {From: StatusNew, To: ErrorRetry}, {From: StatusNew, To: ImportErr},
		{From: ErrorRetry, To: ImportOK}, {From: ErrorRetry, To: ErrorRetry}, {From: ErrorRetry, To: ImportErr},
		// A re-get that finds the record changed on the source sends it through set again.
		{From: ImportOK, To: StatusNew}, {From: ImportErr, To: StatusNew}, {From: ErrorRetry, To: StatusNew},
		// Deletions (deletions.go): a complete get that no longer sees a record, set removing it from
		// the target, and the portal showing it again.
		{From: StatusNew, To: DeletedAtSource}, {From: ImportOK, To: DeletedAtSource},
		{From: ImportErr, To: DeletedAtSource}, {From: ErrorRetry, To: DeletedAtSource},
		{From: DeletedAtSource, To: DeletedOnTarget},
		{From: DeletedAtSource, To: StatusNew}, {From: DeletedOnTarget, To: StatusNew},
	},
	Manual: []status.Transition{
		{From: ImportErr, To: StatusNew}, {From: ErrorRetry, To: StatusNew}, {From: ImportOK, To: StatusNew},
	},
	Attention: []status.Status{ImportErr, ErrorRetry},
	// Seed 000: three retries after 0 s, 2 s and 6 s plus jitter, then IMPORT_ERR.
	Retry: &status.Retry{Status: ErrorRetry, GiveUp: ImportErr, Policy: retry.Default()},
	// A record that cannot be migrated (the portal withholds it) may be accepted by a person
	// as a known exception: verify lists it apart and passes.
	Acknowledgeable: []status.Status{ImportErr},
	// A failure that may pass by itself when another record changes (a parent of the same entity
	// becomes importable) carries a code that set revives it by.
	ReasonCodes: true,
	// A batch start is committed before its import call, so a record that kills the process
	// every time (set.go's attempt) ends in IMPORT_ERR instead of stopping every later set.
	InFlight: true,
}
