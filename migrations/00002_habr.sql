-- Habr ingestion (seed 004): publications discovered from RSS, a short-lived HTML cache, and the
-- extracted Markdown as its own entity. The publication's status is the only thing that decides
-- whether `ingest extract habr` picks it.

-- +goose Up
CREATE TABLE habr_publications (
    id                bigint      PRIMARY KEY,          -- Habr's own article id
    url               text        NOT NULL,             -- canonical https://habr.com/... link
    title             text        NOT NULL,
    author            text        NOT NULL DEFAULT '',
    published_at      timestamptz,                      -- UTC instant
    published_raw     text        NOT NULL DEFAULT '',  -- the feed's pubDate exactly as received
    hubs              text[]      NOT NULL DEFAULT '{}',
    feed              text        NOT NULL,             -- feed path it was first discovered in
    discovered_at     timestamptz NOT NULL DEFAULT now(),
    status            text        NOT NULL DEFAULT 'extract_pending'
                      CHECK (status IN ('extract_pending', 'extracted', 'extract_failed', 'extract_broken')),
    attempts          integer     NOT NULL DEFAULT 0,
    last_error        text,
    status_changed_at timestamptz NOT NULL DEFAULT now()
);
-- Picking by status walks this index in id order: the cost of a batch does not grow with the
-- number of rows in the status.
CREATE INDEX habr_publications_status_id_idx ON habr_publications (status, id);

-- Temporary storage for fetched pages. Never the canonical artifact: rows expire and are purged.
CREATE TABLE habr_html_cache (
    url          text        PRIMARY KEY,
    content_type text        NOT NULL DEFAULT '',
    body         text        NOT NULL,
    fetched_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX habr_html_cache_expires_idx ON habr_html_cache (expires_at);

-- The result of extraction: one row per publication, replaced when re-extracted.
CREATE TABLE habr_markdown (
    publication_id    bigint      PRIMARY KEY REFERENCES habr_publications (id) ON DELETE CASCADE,
    title             text        NOT NULL,
    markdown          text        NOT NULL,
    extractor_version text        NOT NULL,
    content_hash      text        NOT NULL,             -- sha256 of markdown, hex
    extracted_at      timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE habr_markdown;
DROP TABLE habr_html_cache;
DROP TABLE habr_publications;
