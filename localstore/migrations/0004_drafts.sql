-- drafts holds, per conversation, what the user typed and has not sent:
-- it is put back in the input when the chat opens, also after a restart.
CREATE TABLE drafts (
	conv    TEXT PRIMARY KEY,
	text    TEXT NOT NULL,
	updated INTEGER NOT NULL
) WITHOUT ROWID;
