-- The session model: one row per user and conversation (or sub-business
-- gateway), unread totals kept incrementally, and account filing.

CREATE TABLE sessions (
    user_id       TEXT NOT NULL,
    conv          TEXT NOT NULL,
    read_seq      INTEGER NOT NULL DEFAULT 0,
    write_seq     INTEGER NOT NULL DEFAULT 0,
    unread_count  INTEGER NOT NULL DEFAULT 0,
    active_ts     INTEGER NOT NULL,
    write_ts      INTEGER NOT NULL DEFAULT 0,
    muted         INTEGER NOT NULL DEFAULT 0,
    mute_until    INTEGER NOT NULL DEFAULT 0,
    priority      INTEGER NOT NULL DEFAULT 0,
    deleted       INTEGER NOT NULL DEFAULT 0,
    marked_unread INTEGER NOT NULL DEFAULT 0,
    category      TEXT NOT NULL DEFAULT '',
    sub_biz       TEXT NOT NULL DEFAULT '',
    last_conv     TEXT NOT NULL DEFAULT '',
    last_seq      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, conv)
) WITHOUT ROWID;

-- Sync since a cursor reads only what changed after it.
CREATE INDEX sessions_by_active ON sessions (user_id, sub_biz, active_ts);
-- Expiring mutes looks only at muted sessions with an end.
CREATE INDEX sessions_timed_mutes ON sessions (user_id, mute_until) WHERE muted = 1 AND mute_until > 0;

-- Total unread per user and list ('' = the main list, else a sub-business):
-- the sum of the contributions of the list's sessions, kept on every write.
CREATE TABLE unread_totals (
    user_id TEXT NOT NULL,
    sub_biz TEXT NOT NULL,
    total   INTEGER NOT NULL,
    PRIMARY KEY (user_id, sub_biz)
) WITHOUT ROWID;

-- How an account's conversations are filed for the other member.
CREATE TABLE accounts (
    user_id  TEXT PRIMARY KEY,
    category TEXT NOT NULL DEFAULT '',
    sub_biz  TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
