-- Deletions as an outcome of the Bitrix24 migration (issue 20): a complete get that no longer sees
-- a record moves it to DELETED_AT_SOURCE (the target keeps it, or set is to remove it); set with
-- BITRIX_DELETIONS=propagate removes it from the target and moves it to DELETED_ON_TARGET.
-- See docs/bitrix-deletions.md.

-- +goose Up
ALTER TABLE bitrix_records DROP CONSTRAINT bitrix_records_status_check;
ALTER TABLE bitrix_records ADD CONSTRAINT bitrix_records_status_check
    CHECK (status IN ('NEW', 'IMPORT_OK', 'IMPORT_ERR', 'ERROR_RETRY', 'DELETED_AT_SOURCE', 'DELETED_ON_TARGET'));

-- +goose Down
UPDATE bitrix_records SET status = 'NEW' WHERE status IN ('DELETED_AT_SOURCE', 'DELETED_ON_TARGET');
ALTER TABLE bitrix_records DROP CONSTRAINT bitrix_records_status_check;
ALTER TABLE bitrix_records ADD CONSTRAINT bitrix_records_status_check
    CHECK (status IN ('NEW', 'IMPORT_OK', 'IMPORT_ERR', 'ERROR_RETRY'));
