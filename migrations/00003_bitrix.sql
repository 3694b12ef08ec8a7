-- Bitrix24 migration (seeds 000 and 001): every record read from the source portal, its status on
-- the way to the target, the source-to-target id map, and the bookkeeping that lets an interrupted
-- get resume (page log, per-entity inventory). Webhook URLs and tokens are never stored here.

-- +goose Up
CREATE TABLE bitrix_records (
    id                bigserial   PRIMARY KEY,
    entity            text        NOT NULL
                      CHECK (entity IN ('users', 'groups', 'group_members', 'chats', 'chat_messages')),
    -- The portal's id; for a membership "<groupId>:<userId>".
    source_id         text        NOT NULL,
    -- The record this one belongs to: a membership's group.
    parent_source_id  text,
    -- What the target deduplicates on (seed 000 "Idempotency").
    idempotency_key   text        GENERATED ALWAYS AS ('source:' || entity || ':' || source_id) STORED,
    payload           jsonb       NOT NULL,                -- the row exactly as the portal sent it
    checksum          text        NOT NULL,                -- sha256 of the canonical payload, hex
    -- Per date field: {"raw": as received, "utc": instant, "offset": "+03:00"}, or
    -- {"raw": ..., "error": ...} when the value could not be parsed (the record then fails on set).
    dates             jsonb       NOT NULL DEFAULT '{}',
    status            text        NOT NULL DEFAULT 'NEW'
                      CHECK (status IN ('NEW', 'IMPORT_OK', 'IMPORT_ERR', 'ERROR_RETRY')),
    attempts          integer     NOT NULL DEFAULT 0,
    last_error        text,
    status_changed_at timestamptz NOT NULL DEFAULT now(),
    -- Retries used since the record last entered NEW, and when the next one is due (ERROR_RETRY).
    retries           integer     NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz,
    fetched_at        timestamptz NOT NULL DEFAULT now(),  -- last seen by a get
    updated_at        timestamptz NOT NULL DEFAULT now(),  -- payload last changed
    UNIQUE (entity, source_id)
);
-- Picking by status, per entity, in id order.
CREATE INDEX bitrix_records_entity_status_id_idx ON bitrix_records (entity, status, id);
-- A group's memberships.
CREATE INDEX bitrix_records_parent_idx ON bitrix_records (entity, parent_source_id)
    WHERE parent_source_id IS NOT NULL;

-- Source id -> target id, written in the same transaction as the move to IMPORT_OK.
CREATE TABLE bitrix_id_map (
    entity      text        NOT NULL,
    source_id   text        NOT NULL,
    target_id   text        NOT NULL,
    checksum    text        NOT NULL,                      -- of the payload that was imported
    imported_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity, source_id)
);

-- PageLog (seed 000): one row per page read from the source.
CREATE TABLE bitrix_page_log (
    id          bigserial   PRIMARY KEY,
    entity      text        NOT NULL,
    pass        integer     NOT NULL,                      -- which full pass of the get
    cursor      text        NOT NULL,                      -- where the page starts (last id before it)
    next_cursor text        NOT NULL,                      -- where the next page starts
    count       integer     NOT NULL,
    total       bigint,                                    -- as the portal reported it, if it did
    run_id      bigint      REFERENCES runs (id) ON DELETE SET NULL,
    fetched_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bitrix_page_log_entity_idx ON bitrix_page_log (entity, id);

-- SourceInventory (seed 000): one row per entity.
CREATE TABLE bitrix_inventory (
    entity          text        PRIMARY KEY,
    source_total    bigint,                                -- rows the portal reported for the last pass
    pass            integer     NOT NULL DEFAULT 0,        -- the current (or last) get pass
    pass_rows       bigint      NOT NULL DEFAULT 0,        -- rows read so far in that pass
    -- Where an interrupted get resumes; a complete pass makes the next get start a new one.
    get_cursor      text        NOT NULL DEFAULT '0',
    get_complete    boolean     NOT NULL DEFAULT false,
    get_limit       integer,                               -- test_limit of the pass, NULL for a full one
    get_started_at  timestamptz,
    get_finished_at timestamptz,
    -- Seed 000 VERIFIED_FLAG: set only by a clean verify, cleared when records are added or change.
    verified        boolean     NOT NULL DEFAULT false,
    verified_at     timestamptz,
    verify_report   jsonb,                                 -- the last verify's report, clean or not
    verify_at       timestamptz,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Custom fields (userfields) read from the source, and whether they exist on the target.
CREATE TABLE bitrix_fields (
    entity      text        NOT NULL,
    field_name  text        NOT NULL,
    payload     jsonb       NOT NULL,
    checksum    text        NOT NULL,
    on_target   boolean     NOT NULL DEFAULT false,        -- the target has a field of this name
    created_at  timestamptz,                               -- when fields-set created it there
    fetched_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity, field_name)
);

-- +goose Down
DROP TABLE bitrix_fields;
DROP TABLE bitrix_inventory;
DROP TABLE bitrix_page_log;
DROP TABLE bitrix_id_map;
DROP TABLE bitrix_records;
