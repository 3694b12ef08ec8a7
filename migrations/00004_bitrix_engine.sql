-- The entity engine (issue "One migration engine for every Bitrix24 entity"): entities are
-- registered values in the code, so the table no longer lists them; a new entity needs no
-- migration. Retry scheduling (retries, next_attempt_at) is the shared state machine's.

-- +goose Up
ALTER TABLE bitrix_records DROP CONSTRAINT IF EXISTS bitrix_records_entity_check;
ALTER TABLE bitrix_records ADD CONSTRAINT bitrix_records_entity_name
    CHECK (entity ~ '^[a-z][a-z0-9_]*$');

-- +goose Down
ALTER TABLE bitrix_records DROP CONSTRAINT IF EXISTS bitrix_records_entity_name;
ALTER TABLE bitrix_records ADD CONSTRAINT bitrix_records_entity_check
    CHECK (entity IN ('users', 'groups', 'group_members', 'chats', 'chat_messages'));
