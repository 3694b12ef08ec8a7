-- Social-account sync (seed 003, issue 12): tracked accounts (Instagram first), the posts and
-- stories found by listing them, every response page as received (raw, partitioned by month),
-- the normalized records (profiles and their counts over time, posts, media items, threaded
-- comments, hashtags and mentions), and asynchronous enrichment (jobs and labels).
--
-- Four state tables follow internal/status (status, attempts, last_error, status_changed_at,
-- retries, next_attempt_at, an index on (status, id) or (scope, status, id)). Their statuses are
-- the machines' in internal/social/machine.go; the code passes them as parameters, so no status
-- name is written here: the CHECKs only keep the column to the machines' spelling.
--
-- Access tokens are never stored in clear: a connected account's token is sealed with AES-256-GCM
-- under SOCIAL_TOKEN_KEY (which lives in a Kubernetes Secret, never in the database), and named
-- everywhere else by a fingerprint (the first 12 hex digits of its SHA-256).

-- +goose Up
CREATE TABLE social_accounts (
    id                  bigserial   PRIMARY KEY,
    network             text        NOT NULL DEFAULT 'instagram' CHECK (network IN ('instagram')),
    -- connected: the account's own token reads its profile, media, comments and stories.
    -- discovery: business_discovery through a connected account's token (via_account_id) reads
    -- its public profile and media only.
    access              text        NOT NULL CHECK (access IN ('connected', 'discovery')),
    username            text,                     -- as registered (discovery) or as last read
    ig_user_id          text,                     -- the platform's id: given, or learned from the profile
    via_account_id      bigint      REFERENCES social_accounts (id),
    token_sealed        bytea,                    -- nonce || AES-256-GCM(token), connected only
    token_fingerprint   text,
    -- The profile as last normalized (counts over time are in social_account_counts).
    name                text,
    biography           text,
    website             text,
    profile_picture_url text,                     -- a CDN URL: changes between calls, never identity
    followers_count     bigint,
    follows_count       bigint,
    media_count         bigint,
    profile_synced_at   timestamptz,
    -- Posts listing. The high-water mark is the durable incremental state; the cursor only
    -- resumes a listing that was interrupted, and is dropped when stale or refused.
    posts_hwm_at        timestamptz,              -- newest media timestamp of the last complete listing
    list_cursor         text,                     -- `after` of the next page of the listing in progress
    list_cursor_at      timestamptz,
    list_newest_at      timestamptz,              -- newest media timestamp seen by the listing in progress
    list_pages          integer     NOT NULL DEFAULT 0,
    list_restarts       integer     NOT NULL DEFAULT 0,
    listed_at           timestamptz,              -- when the last listing completed
    stories_synced_at   timestamptz,
    -- Graph API calls of the sync cycle in progress and of the last complete one, by endpoint.
    cycle_started_at    timestamptz,
    cycle_calls         jsonb       NOT NULL DEFAULT '{}',
    last_cycle_calls    jsonb,
    last_cycle_started_at  timestamptz,
    last_cycle_finished_at timestamptz,
    added_at            timestamptz NOT NULL DEFAULT now(),
    status              text        NOT NULL CHECK (status ~ '^[a-z][a-z_]*$'),
    attempts            integer     NOT NULL DEFAULT 0,
    last_error          text,
    status_changed_at   timestamptz NOT NULL DEFAULT now(),
    retries             integer     NOT NULL DEFAULT 0,
    next_attempt_at     timestamptz,
    CONSTRAINT social_accounts_token CHECK ((access = 'connected') = (token_sealed IS NOT NULL)),
    CONSTRAINT social_accounts_via CHECK ((access = 'discovery') = (via_account_id IS NOT NULL)),
    CONSTRAINT social_accounts_named CHECK (ig_user_id IS NOT NULL OR username IS NOT NULL)
);
-- Picking by status in id order; next_attempt_at rides along so that a due check (synced
-- accounts, retries) reads the index alone.
CREATE INDEX social_accounts_status_id_idx ON social_accounts (status, id) INCLUDE (next_attempt_at);
CREATE UNIQUE INDEX social_accounts_ig_user_id_key ON social_accounts (network, ig_user_id);
-- A discovery account is registered by its username; two registrations of one name are one.
CREATE UNIQUE INDEX social_accounts_discovery_username_key ON social_accounts (network, lower(username))
    WHERE access = 'discovery';

-- Profile counts over time: one row per profile read.
CREATE TABLE social_account_counts (
    account_id      bigint      NOT NULL REFERENCES social_accounts (id),
    observed_at     timestamptz NOT NULL,
    followers_count bigint,
    follows_count   bigint,
    media_count     bigint,
    PRIMARY KEY (account_id, observed_at)
);

-- Every post, reel, carousel or story a listing found: the state of its comment walk and of its
-- normalization. Identity is the platform's media id, never a URL.
CREATE TABLE social_posts (
    id                  bigserial   PRIMARY KEY,
    account_id          bigint      NOT NULL REFERENCES social_accounts (id),
    ig_media_id         text        NOT NULL UNIQUE,
    surface             text        NOT NULL CHECK (surface IN ('feed', 'story')),
    taken_at            timestamptz,              -- the listing's timestamp, UTC
    taken_raw           text,                     -- as received, e.g. 2021-08-13T08:25:28+0000
    comments_count      integer,
    -- SHA-256 of the listed item without its CDN URLs: a change sends the post back to work.
    item_hash           text        NOT NULL,
    listed_raw_id       bigint      NOT NULL,     -- the raw page holding its latest listing
    listed_raw_at       timestamptz NOT NULL,     -- that page's fetched_at (partition key)
    first_seen_at       timestamptz NOT NULL DEFAULT now(),
    last_seen_at        timestamptz NOT NULL DEFAULT now(),
    -- Comment walk: newest first; the cursor resumes an interrupted walk, the high-water mark
    -- lets a later walk stop at comments it has already read.
    comments_cursor     text,
    comments_cursor_at  timestamptz,
    comments_newest_at  timestamptz,
    comments_hwm_at     timestamptz,
    comments_pages      integer     NOT NULL DEFAULT 0,
    -- Raw comment pages of this post up to this id are normalized.
    normalized_upto     bigint      NOT NULL DEFAULT 0,
    status              text        NOT NULL CHECK (status ~ '^[a-z][a-z_]*$'),
    attempts            integer     NOT NULL DEFAULT 0,
    last_error          text,
    status_changed_at   timestamptz NOT NULL DEFAULT now(),
    retries             integer     NOT NULL DEFAULT 0,
    next_attempt_at     timestamptz
);
-- account_id rides along: a shard's pick (account_id modulo shards) reads the index alone.
CREATE INDEX social_posts_status_id_idx ON social_posts (status, id) INCLUDE (account_id, next_attempt_at);
CREATE INDEX social_posts_account_idx ON social_posts (account_id, taken_at DESC);

-- Raw store: every API response page exactly as received (access tokens inside paging URLs
-- masked), append-only, partitioned by month of fetched_at so that old months can be detached
-- and dropped without a bulk DELETE. Partitions are created ahead by
-- social_raw_partitions_ahead(), which this migration and every sync command call.
CREATE TABLE social_raw_pages (
    id          bigserial,
    fetched_at  timestamptz NOT NULL DEFAULT now(),
    account_id  bigint,
    post_id     bigint,
    endpoint    text        NOT NULL,             -- profile, media, stories, comments, replies, enrich:<provider>
    request     text        NOT NULL,             -- path and query, without the token
    cursor      text,                             -- the `after` it was asked with
    next_cursor text,                             -- paging.cursors.after in it
    has_next    boolean     NOT NULL,             -- whether it announced another page
    items       integer     NOT NULL,
    run_id      bigint,
    body        jsonb       NOT NULL,
    PRIMARY KEY (id, fetched_at)
) PARTITION BY RANGE (fetched_at);
CREATE INDEX social_raw_pages_post_idx ON social_raw_pages (post_id, id) WHERE post_id IS NOT NULL;
CREATE INDEX social_raw_pages_account_idx ON social_raw_pages (account_id, id);

-- +goose StatementBegin
CREATE FUNCTION social_raw_partitions_ahead(months integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    first date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
    m date;
    part text;
    created integer := 0;
BEGIN
    -- Shards start together: one creates, the others find the partition there.
    PERFORM pg_advisory_xact_lock(hashtext('social_raw_pages partitions'));
    FOR i IN 0..months LOOP
        m := (first + make_interval(months => i))::date;
        part := format('social_raw_pages_%s', to_char(m, 'YYYY_MM'));
        IF to_regclass(part) IS NULL THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF social_raw_pages FOR VALUES FROM (%L) TO (%L)',
                part, m::timestamp AT TIME ZONE 'UTC', (m + interval '1 month')::timestamp AT TIME ZONE 'UTC');
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END
$$;
-- +goose StatementEnd
SELECT social_raw_partitions_ahead(2);

-- Normalized posts: one row per post, replaced when the post changes.
CREATE TABLE social_post_content (
    post_id            bigint      PRIMARY KEY REFERENCES social_posts (id),
    account_id         bigint      NOT NULL REFERENCES social_accounts (id),
    ig_media_id        text        NOT NULL,
    kind               text        NOT NULL,      -- image, video, carousel, reel, story, other
    media_type         text        NOT NULL,      -- as received: IMAGE, VIDEO, CAROUSEL_ALBUM
    media_product_type text,                      -- as received: FEED, REELS, STORY, AD
    caption            text,
    permalink          text,
    shortcode          text,
    posted_at          timestamptz NOT NULL,      -- UTC
    posted_raw         text        NOT NULL,      -- as received, with its +0000 offset
    like_count         bigint,                    -- absent when the owner hides likes
    comments_count     bigint,
    is_comment_enabled boolean,
    media_url_missing  boolean     NOT NULL,      -- the platform omitted media_url (copyrighted material)
    source_raw_id      bigint      NOT NULL,
    normalized_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX social_post_content_account_idx ON social_post_content (account_id, posted_at DESC);

-- Likes and comments of a post over time: one row per listing that saw them change.
CREATE TABLE social_post_counts (
    post_id        bigint      NOT NULL REFERENCES social_posts (id),
    observed_at    timestamptz NOT NULL,
    like_count     bigint,
    comments_count bigint,
    PRIMARY KEY (post_id, observed_at)
);

-- The media of a post: the post itself, or each child of a carousel, in order.
CREATE TABLE social_media_items (
    ig_media_id   text        PRIMARY KEY,
    post_id       bigint      NOT NULL REFERENCES social_posts (id),
    position      integer     NOT NULL,
    media_type    text,
    media_url     text,                           -- CDN URL as last read: an attribute, never identity
    thumbnail_url text,
    permalink     text,
    shortcode     text,
    taken_at      timestamptz,
    taken_raw     text
);
CREATE INDEX social_media_items_post_idx ON social_media_items (post_id, position);

-- Comments and replies, threaded by parent_comment_id (NULL for a top-level comment).
CREATE TABLE social_comments (
    ig_comment_id     text        PRIMARY KEY,
    post_id           bigint      NOT NULL REFERENCES social_posts (id),
    parent_comment_id text,
    username          text,
    from_id           text,
    text              text        NOT NULL,
    like_count        bigint,
    hidden            boolean,
    posted_at         timestamptz NOT NULL,
    posted_raw        text        NOT NULL,
    source_raw_id     bigint      NOT NULL,
    normalized_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX social_comments_post_idx ON social_comments (post_id, posted_at);

-- Hashtags and mentions parsed from captions and comments (lower-cased, without # or @).
CREATE TABLE social_tags (
    source_id text   NOT NULL,                    -- the media id (caption) or comment id
    kind      text   NOT NULL CHECK (kind IN ('hashtag', 'mention')),
    tag       text   NOT NULL,
    post_id   bigint NOT NULL REFERENCES social_posts (id),
    source    text   NOT NULL CHECK (source IN ('caption', 'comment')),
    PRIMARY KEY (source_id, kind, tag)
);
CREATE INDEX social_tags_tag_idx ON social_tags (kind, tag);
CREATE INDEX social_tags_post_idx ON social_tags (post_id);

-- Records that failed validation below the post level (a comment without an id or with an
-- unreadable timestamp): listed with the reason, never normalized, never blocking the others.
CREATE TABLE social_rejects (
    kind        text        NOT NULL,             -- comment, reply, media_item
    platform_id text        NOT NULL,             -- its id, or "raw <page id> #<index>" without one
    post_id     bigint,
    reason      text        NOT NULL,
    raw_page_id bigint,
    seen_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, platform_id)
);

-- Asynchronous enrichment (docs/enrichment-api.md): a job is one submitted batch; each post
-- has one enrichment row per provider.
CREATE TABLE social_enrich_jobs (
    id                bigserial   PRIMARY KEY,
    provider          text        NOT NULL CHECK (provider ~ '^[a-z][a-z0-9_]*$'),
    idempotency_token text        NOT NULL UNIQUE,
    external_id       text,
    items             integer     NOT NULL,
    submitted_at      timestamptz,
    results_expire_at timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    status            text        NOT NULL CHECK (status ~ '^[a-z][a-z_]*$'),
    attempts          integer     NOT NULL DEFAULT 0,
    last_error        text,
    status_changed_at timestamptz NOT NULL DEFAULT now(),
    retries           integer     NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz
);
CREATE INDEX social_enrich_jobs_provider_status_id_idx ON social_enrich_jobs (provider, status, id);

CREATE TABLE social_enrichments (
    id                bigserial   PRIMARY KEY,
    post_id           bigint      NOT NULL REFERENCES social_posts (id),
    provider          text        NOT NULL CHECK (provider ~ '^[a-z][a-z0-9_]*$'),
    job_id            bigint      REFERENCES social_enrich_jobs (id),
    submissions       integer     NOT NULL DEFAULT 0,
    status            text        NOT NULL CHECK (status ~ '^[a-z][a-z_]*$'),
    attempts          integer     NOT NULL DEFAULT 0,
    last_error        text,
    status_changed_at timestamptz NOT NULL DEFAULT now(),
    retries           integer     NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz,
    UNIQUE (post_id, provider)
);
CREATE INDEX social_enrichments_provider_status_id_idx ON social_enrichments (provider, status, id);
CREATE INDEX social_enrichments_job_idx ON social_enrichments (job_id) WHERE job_id IS NOT NULL;

-- Labels returned by the providers, normalized: subject is "media:<id>", "caption" or
-- "comment:<id>".
CREATE TABLE social_labels (
    post_id    bigint NOT NULL REFERENCES social_posts (id),
    provider   text   NOT NULL,
    subject    text   NOT NULL,
    label      text   NOT NULL,
    confidence real,
    job_id     bigint NOT NULL,
    PRIMARY KEY (post_id, provider, subject, label)
);

-- Tokens and the app parked after a throttling answer, until the time the platform gave: every
-- pod and every later run skips them until then.
CREATE TABLE social_parks (
    key       text        PRIMARY KEY,            -- "app" or "token:<fingerprint>"
    until     timestamptz NOT NULL,
    reason    text        NOT NULL,
    parked_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE social_parks;
DROP TABLE social_labels;
DROP TABLE social_enrichments;
DROP TABLE social_enrich_jobs;
DROP TABLE social_rejects;
DROP TABLE social_tags;
DROP TABLE social_comments;
DROP TABLE social_media_items;
DROP TABLE social_post_counts;
DROP TABLE social_post_content;
DROP FUNCTION social_raw_partitions_ahead(integer);
DROP TABLE social_raw_pages;
DROP TABLE social_posts;
DROP TABLE social_account_counts;
DROP TABLE social_accounts;
