// Package social syncs social-network accounts (Instagram first, seed 003) into Postgres on the
// shared state machine: for every tracked account the profile, then its posts page by page
// behind a cursor (stories too, for connected accounts), then, as separate work, the comments of
// each new or changed post; every response page goes to an append-only raw store; normalize
// validates the raw items and writes typed posts, media items, threaded comments, hashtags and
// mentions; enrichment submits media and texts to asynchronous providers and polls for labels.
//
// Four machines (machine.go) carry the work: accounts (profile and listing), posts (comments
// and normalization), enrichments (one per post and provider) and enrichment jobs. Every
// command picks by status in fixed batches, one record after another within its shard, and
// commits each record's outcome (each page, for walks) on its own, so a killed run loses at
// most the page in flight and a rerun continues from the stored cursor. Profile reads and
// comment walks are attempts in flight (attempts.go): an account or post whose process dies in
// every attempt ends failed instead of being retried by every run.
package social
