// Package status is the state machine every ingest pipeline shares.
//
// A pipeline keeps its records in a table of its own, with at least these columns:
//
//	id                bigint primary key  -- keyset order for picking
//	status            text                -- CHECK-constrained to the machine's statuses
//	attempts          integer             -- processing outcomes recorded so far
//	last_error        text                -- why the last failure happened, NULL after success
//	status_changed_at timestamptz
//
// and an index on (status, id). A Machine names that table, its statuses and the moves between
// them; the functions here pick records purely by status, move one record from one status to
// another guarded by its current status (so a late or repeated move changes nothing), record
// every move in status_history, and let a person move records by hand where the machine allows.
//
// Commands take a Postgres session advisory lock (Lock) so the same command never runs twice at
// once.
package status
