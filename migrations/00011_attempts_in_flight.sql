-- Attempts in flight for every pipeline (internal/status Machine.InFlight), as Habr has had since
-- 00005: attempt_started_at (and the run, attempt_run_id) is committed before a record's work
-- starts (a Bitrix24 batch before its import call, an Instagram account or post before its walk)
-- and cleared by the move that records the outcome, so an attempt whose process died (killed,
-- out of memory, node lost) is found by the next run and counted as a failed attempt
-- (status.Machine.FailUnfinished): a record that kills the process every time ends failed
-- instead of being retried forever.
--
-- Nullable columns without a default: adding them rewrites no row.

-- +goose Up
ALTER TABLE bitrix_records
    ADD COLUMN attempt_started_at timestamptz,
    ADD COLUMN attempt_run_id     bigint;
ALTER TABLE social_accounts
    ADD COLUMN attempt_started_at timestamptz,
    ADD COLUMN attempt_run_id     bigint;
ALTER TABLE social_posts
    ADD COLUMN attempt_started_at timestamptz,
    ADD COLUMN attempt_run_id     bigint;
-- Each run looks for the attempts that never finished; there are none or very few.
CREATE INDEX bitrix_records_unfinished_idx ON bitrix_records (entity, id) WHERE attempt_started_at IS NOT NULL;
CREATE INDEX social_accounts_unfinished_idx ON social_accounts (id) WHERE attempt_started_at IS NOT NULL;
CREATE INDEX social_posts_unfinished_idx ON social_posts (id) WHERE attempt_started_at IS NOT NULL;

-- +goose Down
DROP INDEX social_posts_unfinished_idx;
DROP INDEX social_accounts_unfinished_idx;
DROP INDEX bitrix_records_unfinished_idx;
ALTER TABLE social_posts DROP COLUMN attempt_started_at, DROP COLUMN attempt_run_id;
ALTER TABLE social_accounts DROP COLUMN attempt_started_at, DROP COLUMN attempt_run_id;
ALTER TABLE bitrix_records DROP COLUMN attempt_started_at, DROP COLUMN attempt_run_id;
