-- Social sync, issue 22: walks that end only where the platform says so, the repair of walks an
-- earlier version cut short, and enrichment that survives a crash and a bad token.
--
-- walk_version is the version of the walk rules under which an account's listing (or a post's
-- comment walk) last reached the platform's end: 0 for walks of the versions before this one,
-- which took an empty page for the end. The sync's repair scan compares what those walks stored
-- with what the platform announced (media_count, comments_count) and walks the short ones again
-- in full, once (full_walk for an account; a post goes back to comments_pending without its
-- comment mark).

-- +goose Up
ALTER TABLE social_accounts
    ADD COLUMN walk_version smallint NOT NULL DEFAULT 0,
    ADD COLUMN full_walk    boolean  NOT NULL DEFAULT false;
ALTER TABLE social_posts
    ADD COLUMN walk_version smallint NOT NULL DEFAULT 0;
-- The repair scan reads only walks of earlier versions that completed.
CREATE INDEX social_accounts_repair_idx ON social_accounts (id) WHERE walk_version = 0 AND listed_at IS NOT NULL;
CREATE INDEX social_posts_repair_idx ON social_posts (id) WHERE walk_version = 0 AND comments_hwm_at IS NOT NULL;

-- A job's submission exactly as it was first sent (items in order), stored before it is sent:
-- a resend under the same idempotency token carries the same body, whatever changed since.
ALTER TABLE social_enrich_jobs
    ADD COLUMN submission   jsonb,
    -- The page token of the next results page to read; the pages already read are in the raw
    -- store (social_raw_pages.job_id), so a failure on a later page does not read them again.
    ADD COLUMN results_next text,
    ADD COLUMN results_read integer NOT NULL DEFAULT 0;
ALTER TABLE social_raw_pages ADD COLUMN job_id bigint;
CREATE INDEX social_raw_pages_job_idx ON social_raw_pages (job_id, id) WHERE job_id IS NOT NULL;

-- +goose Down
DROP INDEX social_raw_pages_job_idx;
ALTER TABLE social_raw_pages DROP COLUMN job_id;
ALTER TABLE social_enrich_jobs DROP COLUMN submission, DROP COLUMN results_next, DROP COLUMN results_read;
DROP INDEX social_posts_repair_idx;
DROP INDEX social_accounts_repair_idx;
ALTER TABLE social_posts DROP COLUMN walk_version;
ALTER TABLE social_accounts DROP COLUMN walk_version, DROP COLUMN full_walk;
