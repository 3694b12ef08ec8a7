-- 00010: the fence. A run that lost its lock commits nothing more.
--
-- The run that takes a command's lock records itself here as the lock's holder (pgsession.Claim).
-- Its connections carry the lock's name and the run's id (ingest.lock, ingest.run: pgsession.Fence),
-- and every write statement on a fenced table checks, once per transaction, that the run still
-- holds the lock, keeping a share lock on that row until the transaction ends. A later run's claim
-- waits for those transactions; once it commits, every write of the old run fails (SQLSTATE
-- IF001). Sessions that carry no run (a person's `ingest status set`, migrations) are not fenced.
--
-- Every table is fenced but the runs bookkeeping; a table created by a later migration is fenced
-- with `SELECT ingest_fence_table('name');` (a test checks that none is missed).

-- +goose Up
CREATE TABLE run_locks (
    name       text        PRIMARY KEY,
    run_id     bigint      NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now()
);

-- +goose StatementBegin
CREATE FUNCTION ingest_fence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    lock_name text := current_setting('ingest.lock', true);
    holder    run_locks%ROWTYPE;
BEGIN
    IF coalesce(lock_name, '') = '' OR current_setting('ingest.fenced', true) = 'yes' THEN
        RETURN NULL;
    END IF;
    SELECT * INTO holder FROM run_locks WHERE name = lock_name FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run % does not hold the lock "%": no run is recorded as its holder',
            current_setting('ingest.run'), lock_name USING ERRCODE = 'IF001';
    END IF;
    IF holder.run_id <> current_setting('ingest.run')::bigint THEN
        RAISE EXCEPTION 'run % no longer holds the lock "%": run % took it over at %; this run commits nothing more',
            current_setting('ingest.run'), lock_name, holder.run_id, holder.claimed_at USING ERRCODE = 'IF001';
    END IF;
    -- Checked for this transaction: later statements in it skip the lookup (the share lock stays).
    PERFORM set_config('ingest.fenced', 'yes', true);
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION ingest_fence_table(t regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TRIGGER ingest_fence BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s '
        'FOR EACH STATEMENT EXECUTE FUNCTION ingest_fence()', t);
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN SELECT c.oid::regclass FROM pg_class c
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
          AND c.relname NOT IN ('runs', 'run_locks', 'goose_db_version')
    LOOP
        PERFORM ingest_fence_table(t);
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN SELECT tgrelid::regclass FROM pg_trigger WHERE tgname = 'ingest_fence' LOOP
        EXECUTE format('DROP TRIGGER ingest_fence ON %s', t);
    END LOOP;
END $$;
-- +goose StatementEnd
DROP FUNCTION ingest_fence_table(regclass);
DROP FUNCTION ingest_fence();
DROP TABLE run_locks;
