-- Reason codes for the social accounts and posts (internal/status Machine.ReasonCodes), as
-- bitrix_records has had since 00008: a profile read or a comment walk whose process died is
-- counted by the next run as a failed attempt with the code attempt_unfinished, and an account
-- or post that kills the process every time ends in sync_failed / comments_failed with it, so a
-- program (or a person with SQL) finds them by the code rather than by last_error's wording.
--
-- Nullable columns without a default: adding them rewrites no row. Failures recorded before
-- carry no code.

-- +goose Up
ALTER TABLE social_accounts ADD COLUMN reason_code text;
ALTER TABLE social_posts ADD COLUMN reason_code text;

-- +goose Down
ALTER TABLE social_posts DROP COLUMN reason_code;
ALTER TABLE social_accounts DROP COLUMN reason_code;
