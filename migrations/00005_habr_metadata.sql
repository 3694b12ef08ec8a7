-- Habr publication metadata as first-class data, and extraction retries that end.
--
-- Metadata: a feed's <category> elements mix hubs with tags (and some feeds have none), so they
-- are kept as received in feed_categories; hubs and tags come from the article page, together
-- with the author's display name, the company blog and a translation's original author and URL.
-- Existing rows keep their categories; their page metadata is filled by their next extraction.
--
-- Retries: the shared state machine's scheduling (retries, next_attempt_at; see
-- internal/status/schedule.go), plus the attempt in progress: attempt_started_at is committed
-- before a page is fetched and cleared by the move that records the outcome, so an attempt whose
-- process died (killed, out of memory) is found by the next run and counted.

-- +goose Up
ALTER TABLE habr_publications RENAME COLUMN hubs TO feed_categories;
ALTER TABLE habr_publications
    ADD COLUMN hubs               text[]      NOT NULL DEFAULT '{}',  -- from the page
    ADD COLUMN tags               text[]      NOT NULL DEFAULT '{}',  -- from the page
    ADD COLUMN author_name        text        NOT NULL DEFAULT '',    -- display name; author is the login
    ADD COLUMN company_alias      text        NOT NULL DEFAULT '',    -- company blog, e.g. "parallels"
    ADD COLUMN company_name       text        NOT NULL DEFAULT '',    -- as the page names it
    ADD COLUMN original_author    text        NOT NULL DEFAULT '',    -- translations only
    ADD COLUMN original_url       text        NOT NULL DEFAULT '',    -- translations only
    ADD COLUMN retries            integer     NOT NULL DEFAULT 0,
    ADD COLUMN next_attempt_at    timestamptz,
    ADD COLUMN attempt_started_at timestamptz,
    ADD COLUMN attempt_run_id     bigint;
-- Each run looks for attempts that never finished; there are none or very few.
CREATE INDEX habr_publications_unfinished_idx ON habr_publications (id) WHERE attempt_started_at IS NOT NULL;

-- +goose Down
DROP INDEX habr_publications_unfinished_idx;
ALTER TABLE habr_publications
    DROP COLUMN hubs, DROP COLUMN tags, DROP COLUMN author_name, DROP COLUMN company_alias,
    DROP COLUMN company_name, DROP COLUMN original_author, DROP COLUMN original_url,
    DROP COLUMN retries, DROP COLUMN next_attempt_at, DROP COLUMN attempt_started_at,
    DROP COLUMN attempt_run_id;
ALTER TABLE habr_publications RENAME COLUMN feed_categories TO hubs;
