-- meta holds the profile's single values: its device id, its user and the
-- sync cursor of each session list.
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;

-- messages holds every message the profile stored, and its own messages
-- still in the outbox (seq NULL until the server answers sent). id is the
-- order of arrival, which orders outbox messages among themselves.
CREATE TABLE messages (
	id        INTEGER PRIMARY KEY,
	conv      TEXT NOT NULL,
	msg_id    TEXT NOT NULL,
	seq       INTEGER,
	sender    TEXT NOT NULL,
	body      TEXT NOT NULL,
	client_ts INTEGER NOT NULL DEFAULT 0,
	server_ts INTEGER NOT NULL DEFAULT 0,
	kind      TEXT NOT NULL DEFAULT '',
	UNIQUE (conv, msg_id)
);
CREATE UNIQUE INDEX messages_by_seq ON messages (conv, seq) WHERE seq IS NOT NULL;
CREATE INDEX messages_unsent ON messages (conv, id) WHERE seq IS NULL;

-- convs holds per-conversation progress: synced_seq is the seq up to which
-- the profile holds everything the server has (gap filling starts above it).
CREATE TABLE convs (
	conv       TEXT PRIMARY KEY,
	synced_seq INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- sessions holds the session list: the whole session object as JSON, and
-- the columns the list is filtered and sorted by.
CREATE TABLE sessions (
	conv         TEXT PRIMARY KEY,
	sub_biz      TEXT NOT NULL,
	priority     INTEGER NOT NULL,
	write_ts     INTEGER NOT NULL,
	active_ts    INTEGER NOT NULL,
	deleted      INTEGER NOT NULL,
	muted        INTEGER NOT NULL,
	mute_until   INTEGER NOT NULL,
	unread_count INTEGER NOT NULL,
	object       TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_by_order ON sessions (sub_biz, deleted, priority DESC, write_ts DESC, conv);

-- ticks holds each conversation's tick boundaries; they only ever rise.
CREATE TABLE ticks (
	conv          TEXT PRIMARY KEY,
	delivered_seq INTEGER NOT NULL,
	read_seq      INTEGER NOT NULL
) WITHOUT ROWID;

-- outbox holds the profile's messages not yet answered by sent, oldest
-- first by id.
CREATE TABLE outbox (
	id        INTEGER PRIMARY KEY,
	conv      TEXT NOT NULL,
	msg_id    TEXT NOT NULL,
	body      TEXT NOT NULL,
	client_ts INTEGER NOT NULL,
	UNIQUE (conv, msg_id)
);
