-- Core messaging tables: conversations with their sequencer, messages keyed
-- by (conversation, seq), the idempotency index, pending deliveries and the
-- per-user tick boundaries.

CREATE TABLE conversations (
    conv           TEXT PRIMARY KEY,
    kind           TEXT NOT NULL,
    title          TEXT NOT NULL DEFAULT '',
    max_seq        INTEGER NOT NULL DEFAULT 0,
    -- the tick minimum over members, kept to detect when it rises
    tick_delivered INTEGER NOT NULL DEFAULT 0,
    tick_read      INTEGER NOT NULL DEFAULT 0,
    created_ts     INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE messages (
    conv      TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    msg_id    TEXT NOT NULL,
    sender    TEXT NOT NULL,
    body      TEXT NOT NULL,
    client_ts INTEGER NOT NULL,
    server_ts INTEGER NOT NULL,
    kind      TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (conv, seq)
);

CREATE TABLE message_ids (
    conv   TEXT NOT NULL,
    msg_id TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    PRIMARY KEY (conv, msg_id)
) WITHOUT ROWID;

CREATE TABLE pending_deliveries (
    receiver              TEXT NOT NULL,
    conv                  TEXT NOT NULL,
    first_undelivered_seq INTEGER NOT NULL,
    PRIMARY KEY (receiver, conv)
) WITHOUT ROWID;

-- One row per member of a conversation: the member's two boundaries.
CREATE TABLE message_status (
    user_id            TEXT NOT NULL,
    conv               TEXT NOT NULL,
    last_delivered_seq INTEGER NOT NULL DEFAULT 0,
    last_read_seq      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, conv)
) WITHOUT ROWID;

-- The tick minimum of a conversation is two index look-ups, whatever its size.
CREATE INDEX message_status_conv_delivered ON message_status (conv, last_delivered_seq);
CREATE INDEX message_status_conv_read ON message_status (conv, last_read_seq);
