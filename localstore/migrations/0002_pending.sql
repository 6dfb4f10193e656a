-- pending_reads holds the user's read marks the server has not confirmed
-- yet: they survive a restart and go out on every connection until ok.
CREATE TABLE pending_reads (
	conv TEXT PRIMARY KEY,
	seq  INTEGER NOT NULL
) WITHOUT ROWID;

-- tried is set once a send of the outbox message was written to a
-- connection: the server may have stored it even if no answer came.
ALTER TABLE outbox ADD COLUMN tried INTEGER NOT NULL DEFAULT 0;

-- failed marks one of the profile's own messages (seq NULL) whose retried
-- send the server refused after an earlier try may have been stored: it is
-- no longer sent, but kept in the chat.
ALTER TABLE messages ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;
