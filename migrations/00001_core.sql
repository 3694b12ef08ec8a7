-- Shared bookkeeping: one row per command run, and the history of every status change of every
-- record in every pipeline (automatic and manual), so a person can see who moved what, when, why.

-- +goose Up
CREATE TABLE runs (
    id          bigserial PRIMARY KEY,
    command     text        NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    -- abandoned: the process died (kill -9, OOM, node loss); found by the next run of the command.
    outcome     text        NOT NULL DEFAULT 'running'
                CHECK (outcome IN ('running', 'succeeded', 'failed', 'interrupted', 'abandoned')),
    counters    jsonb       NOT NULL DEFAULT '{}',
    error       text,
    CONSTRAINT runs_finished_iff_not_running CHECK ((outcome = 'running') = (finished_at IS NULL))
);
CREATE INDEX runs_command_started_idx ON runs (command, started_at DESC);

CREATE TABLE status_history (
    id          bigserial PRIMARY KEY,
    machine     text        NOT NULL,
    record_id   bigint      NOT NULL,
    from_status text        NOT NULL,
    to_status   text        NOT NULL,
    reason      text        NOT NULL DEFAULT '',
    -- "run 42 (extract habr)" for automatic moves, "manual: alice" for `ingest status set`.
    actor       text        NOT NULL,
    run_id      bigint      REFERENCES runs (id) ON DELETE SET NULL,
    changed_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX status_history_record_idx ON status_history (machine, record_id, id);

-- +goose Down
DROP TABLE status_history;
DROP TABLE runs;
