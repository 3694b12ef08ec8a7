-- Reason codes (internal/status Machine.ReasonCodes): a failure's cause classified by a short,
-- stable code beside last_error's wording, so that a program finds records by why they failed
-- without matching the message. Bitrix24 set revives a task failed because its parent task could
-- not be imported ("parent_unavailable") once that parent can be.

-- +goose Up
ALTER TABLE bitrix_records ADD COLUMN reason_code text;

-- Failures recorded before the code: the orphan reasons all read
-- "<field> <parent>: parent <noun> <parent> ...".
UPDATE bitrix_records SET reason_code = 'parent_unavailable'
WHERE status = 'IMPORT_ERR' AND parent_source_id IS NOT NULL
  AND last_error LIKE '% ' || parent_source_id || ': parent % ' || parent_source_id || ' %';

-- +goose Down
ALTER TABLE bitrix_records DROP COLUMN reason_code;
