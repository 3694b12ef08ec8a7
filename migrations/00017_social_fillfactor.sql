-- Room on each page of the two social state tables for updated rows (issue 34). A sync cycle
-- rewrites an account's row about thirteen times (the call counts after each page, the
-- profile, the listing's cursor, the moves) and every post of its first media page once (where
-- it was last listed). In full pages each new version goes to another page, with an entry in
-- every index of the table: the status index's range a shard's picks read filled with dead
-- entries, cycle after cycle, until vacuum. With free space on the page, an update that
-- changes no indexed column (all but the moves, the attempts and the end of a listing) is a
-- heap-only tuple: no index entry, and the page prunes the dead version itself.
--
-- Measured (300 generated accounts, 4 shards, three cycles): heap-only updates of social_posts
-- 27% -> 45%; social_accounts about 48% either way (the rest change an indexed column).
--
-- Only pages written from now on keep the room; existing ones get it as they are rewritten
-- (VACUUM FULL, or pg_repack, to have it at once).

-- +goose Up
ALTER TABLE social_accounts SET (fillfactor = 70);
ALTER TABLE social_posts SET (fillfactor = 80);

-- +goose Down
ALTER TABLE social_posts RESET (fillfactor);
ALTER TABLE social_accounts RESET (fillfactor);
