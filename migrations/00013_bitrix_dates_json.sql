-- bitrix_records.dates as json, not jsonb (issue 21). The dates column is written by the get
-- (engine.datesJSON, for every record it stores) and read back whole by Go; no statement looks
-- inside it. jsonb parses and re-encodes every document it stores, which on a large get was a
-- measurable share of the database's work: a COPY of 100,000 deal rows (five dates each, about
-- 450 bytes) took 3.1 and 4.0 s with dates as json against 3.9 and 4.7 s as jsonb. json only
-- validates the text.
--
-- payload stays jsonb: verify, status and the links read fields inside it with ->, ->> and ?,
-- about ten times slower on json (measured: 0.54-0.90 s against 0.05-0.06 s for one ->> over
-- 100,000 rows), which would cost verify more than the get saves.
--
-- Both directions rewrite the table once.

-- +goose Up
ALTER TABLE bitrix_records
    ALTER COLUMN dates DROP DEFAULT,
    ALTER COLUMN dates TYPE json USING dates::json,
    ALTER COLUMN dates SET DEFAULT '{}'::json;

-- +goose Down
ALTER TABLE bitrix_records
    ALTER COLUMN dates DROP DEFAULT,
    ALTER COLUMN dates TYPE jsonb USING dates::jsonb,
    ALTER COLUMN dates SET DEFAULT '{}'::jsonb;
