-- A user's settings as others see them (protocol.UserSettings): last_seen
-- 'everyone' or 'nobody', read_receipts 1 or 0, the display name, the
-- users it blocked as a JSON array of ids, sorted; and when its last device
-- went away (last_seen_at, server ms; 0: never seen). A user without a row
-- has the default settings.
CREATE TABLE people (
    user_id       TEXT PRIMARY KEY,
    last_seen     TEXT NOT NULL DEFAULT 'everyone',
    read_receipts INTEGER NOT NULL DEFAULT 1,
    name          TEXT NOT NULL DEFAULT '',
    blocked       TEXT NOT NULL DEFAULT '[]',
    last_seen_at  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
