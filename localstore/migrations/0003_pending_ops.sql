-- pending_ops holds the user's session operations (pin, mute, ...) the
-- server has not answered yet, oldest first by id. Each is applied to the
-- stored session when it is made, and again over every copy of the session
-- the server sends before its answer; it goes out on every connection
-- until answered.
CREATE TABLE pending_ops (
	id       INTEGER PRIMARY KEY,
	conv     TEXT NOT NULL,
	op       TEXT NOT NULL,
	until    INTEGER NOT NULL DEFAULT 0,
	category TEXT NOT NULL DEFAULT ''
);
CREATE INDEX pending_ops_by_conv ON pending_ops (conv, id);
