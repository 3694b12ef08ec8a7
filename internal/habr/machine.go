package habr

import "github.com/ingest-dev/ingest/internal/status"

// Publication statuses, exactly as seed 004 names them.
const (
	// Pending: registered by discovery, Markdown not extracted yet.
	Pending status.Status = "extract_pending"
	// Extracted: the Markdown text is stored.
	Extracted status.Status = "extracted"
	// Failed: a network-class error (unreachable, HTTP error status, redirect, truncated body);
	// the next run tries again.
	Failed status.Status = "extract_failed"
	// Broken: the page arrived but holds no complete article body; left alone until a person
	// moves it back to Pending with `ingest status set habr`.
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
}
