-- Delta passes of the Bitrix24 get (issue 35): after a complete pass, a get may read only what the
-- portal changed since (a delta pass) instead of every record again (a full pass). The inventory
-- keeps what the next get decides with: which kind the current pass is and why, the portal's own
-- clock at its start (the next delta reads records modified after it, less a margin), when the
-- last complete full pass started (a full pass is due again after BITRIX_FULL_EVERY), and the
-- fingerprint of what a full pass read with (a change of the fields read forces a full pass).
-- docs/bitrix-delta.md.
--
-- Nullable columns, or a constant default: adding them rewrites no row. An inventory written
-- before has no portal start and no fingerprint: its next get is a full pass, which says so.

-- +goose Up
ALTER TABLE bitrix_inventory
    ADD COLUMN pass_kind         text NOT NULL DEFAULT 'full' CHECK (pass_kind IN ('full', 'delta')),
    ADD COLUMN pass_reason       text,
    ADD COLUMN portal_started_at timestamptz,
    ADD COLUMN delta_since       timestamptz,
    ADD COLUMN last_full_at      timestamptz,
    ADD COLUMN fingerprint       text;

-- +goose Down
ALTER TABLE bitrix_inventory
    DROP COLUMN fingerprint,
    DROP COLUMN last_full_at,
    DROP COLUMN delta_since,
    DROP COLUMN portal_started_at,
    DROP COLUMN pass_reason,
    DROP COLUMN pass_kind;
