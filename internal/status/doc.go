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
// Scheduling is part of the machine too, so every pipeline retries and orders its work the same
// way: a machine with a Retry schedule records failed attempts with Fail (retryable failures
// wait in Retry.Status until their next attempt is due, 0 s / 2 s / 6 s plus jitter by default
// for Bitrix24; permanent ones and those out of retries go to Retry.GiveUp with the reason),
// Pick with DueBy picks waiting records only once they are due, NextDue says when the next one
// is, and Pick with a ParentPick picks child records only once their parent reached a given
// status (members after their workgroup, messages after their chat). Statuses listed in
// Machine.Waiting wait for a time of their own (an account synced until its next sync, a job
// until its next poll): a move into one sets the time, and Pick with DueBy honours it. Pick with
// a Shard takes one of several disjoint parts of the table, so that the pods of a sharded job
// never pick each other's records.
//
// The rest of scheduling is here too, so no pipeline writes these columns by hand: Fail reads
// the retries used and moves the record in one statement; ResetSchedule starts a changed
// record's schedule afresh; PickChildren picks one parent's children in the order they must be
// sent (a chat's messages); a machine with ReasonCodes stores a failure's code (Failure.Code)
// beside its wording, and Revive sends back the records that failed with a code once its cause
// passed (a parent that can be imported now), never matching the wording of a message; a machine
// with InFlight records each attempt as it starts (StartAttempt, Attempt around the work, or
// StartAttempts for a batch sent as one), so that every pipeline's next run, as it starts,
// counts the attempts whose process died as failed attempts through the retry schedule
// (FailUnfinished, one statement; code AttemptUnfinished), and a batch pipeline sends the
// records whose last attempt died alone (DiedDuring).
//
// Commands take a Postgres session advisory lock (Lock) so the same command never runs twice at
// once.
package status
