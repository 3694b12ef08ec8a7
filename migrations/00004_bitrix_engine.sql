-- The entity engine (issue "One migration engine for every Bitrix24 entity"): entities are
-- registered values in the code, so the table no longer lists them; a new entity needs no
-- migration. Retry scheduling (retries, next_attempt_at) is the shared state machine's.

-- +goose Up
ALTER TABLE bitrix_records DROP CONSTRAINT IF EXISTS bitrix_records_entity_check;
ALTER TABLE bitrix_records ADD CONSTRAINT bitrix_records_entity_name
    CHECK (entity ~ '^[a-z][a-z0-9_]*$');

-- A person's acceptance of a record that cannot be migrated (`ingest status ack`): verify then
-- lists it apart instead of failing on it. Cleared by the record's next status change.
ALTER TABLE bitrix_records
    ADD COLUMN acknowledged_at     timestamptz,
    ADD COLUMN acknowledged_by     text,
    ADD COLUMN acknowledged_reason text;

-- Enumeration options of custom fields: the portal's option id and the target's, matched by
-- fields-set (by XML_ID, else by value), so that set sends enumeration values as target ids.
CREATE TABLE bitrix_field_options (
    entity           text NOT NULL,
    field_name       text NOT NULL,
    source_option_id text NOT NULL,
    target_option_id text NOT NULL,
    value            text NOT NULL DEFAULT '',
    PRIMARY KEY (entity, field_name, source_option_id)
);

-- The ID ranges a get pass walks at once (entities listed by an ID scan): where each range
-- stands, moved in the transaction that stores its rows, so an interrupted get resumes every
-- range where it stopped. A range holds the IDs after lo up to and including hi ('' for no end).
CREATE TABLE bitrix_get_ranges (
    entity text    NOT NULL,
    pass   integer NOT NULL,
    lo     text    NOT NULL,
    hi     text    NOT NULL,
    cursor text    NOT NULL,                               -- the last ID stored
    done   boolean NOT NULL DEFAULT false,
    PRIMARY KEY (entity, pass, lo)
);

-- +goose Down
DROP TABLE bitrix_get_ranges;
DROP TABLE bitrix_field_options;
ALTER TABLE bitrix_records
    DROP COLUMN acknowledged_at, DROP COLUMN acknowledged_by, DROP COLUMN acknowledged_reason;
ALTER TABLE bitrix_records DROP CONSTRAINT IF EXISTS bitrix_records_entity_name;
ALTER TABLE bitrix_records ADD CONSTRAINT bitrix_records_entity_check
    CHECK (entity IN ('users', 'groups', 'group_members', 'chats', 'chat_messages'));
