package habr

import (
	"time"

	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/status"
)

// Publication statuses, exactly as seed 004 names them.
const (
	// Pending: registered by discovery, Markdown not extracted yet.
	Pending status.Status = "extract_pending"
	// Extracted: the Markdown text is stored.
	Extracted status.Status = "extracted"
	// Failed: a network-class error (unreachable, HTTP error status, redirect, truncated body),
	// or an attempt that never finished; a later run tries again once RetrySchedule says so.
	Failed status.Status = "extract_failed"
	// Broken: the page arrived but holds no complete article body, is over the size cap or off
	// Habr, or the retries are used up; left alone until a person moves it back to Pending with
	// `ingest status set habr`.
	Broken status.Status = "extract_broken"
)

// Machine is the publication state machine of the Habr pipeline.
var Machine = &status.Machine{
	Name:     "habr",
	Table:    "habr_publications",
	Statuses: []status.Status{Pending, Extracted, Failed, Broken},
	Auto: []status.Transition{
		{From: Pending, To: Extracted}, {From: Pending, To: Failed}, {From: Pending, To: Broken},
		{From: Failed, To: Extracted}, {From: Failed, To: Failed}, {From: Failed, To: Broken},
	},
	// Re-processing happens only after a person says so (seed 004 §5): back to Pending from
	// any outcome, or giving up on a publication that keeps failing.
	Manual: []status.Transition{
		{From: Broken, To: Pending}, {From: Failed, To: Pending}, {From: Extracted, To: Pending},
		{From: Failed, To: Broken}, {From: Pending, To: Broken},
	},
	Attention: []status.Status{Failed, Broken},
	Retry:     &status.Retry{Status: Failed, GiveUp: Broken, Policy: RetrySchedule},
	// A page that kills the process (out of memory on a huge article) must count as a failed
	// attempt, or it blocks every later run.
	InFlight: true,
}

// RetrySchedule spaces the attempts at a publication whose page could not be fetched: 5 retries
// after the first attempt, the last about 22 hours after it (plus up to 20% jitter and the wait
// for the next run), then extract_broken with "gave up after 6 attempts: <last cause>". Habr's
// outages last minutes to hours; a page still failing after a day needs a person, and backing
// off keeps a failing page from taking a place in every run's first batch.
var RetrySchedule = retry.Policy{
	Delays: []time.Duration{10 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour},
	Jitter: 0.2,
}
