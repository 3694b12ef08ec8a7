-- When a get last saw a record modified on the portal (issue 35): returned by a delta pass's
-- modification filter, whether or not its checksum moved (a new timeline comment moves only a
-- record's activity fields, which the checksum leaves out). A delta pass of what is read record by
-- record of other entities (timeline comments, product rows) reads the owners modified or changed
-- since its last pass: updated_at (the payload changed) or modified_at, and not every owner an ID
-- range's re-listing read unchanged. docs/bitrix-delta.md.
--
-- Nullable without a default: adding it rewrites no row.

-- +goose Up
ALTER TABLE bitrix_records ADD COLUMN modified_at timestamptz;

-- +goose Down
ALTER TABLE bitrix_records DROP COLUMN modified_at;
