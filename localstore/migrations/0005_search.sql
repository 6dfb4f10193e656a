-- messages_fts indexes the bodies of the stored messages for the search
-- in a chat (SQLite FTS5, external content: the text stays in messages).
-- Words are matched without case or accents (cafe finds café).
CREATE VIRTUAL TABLE messages_fts USING fts5(
	body,
	content = 'messages',
	content_rowid = 'id',
	tokenize = 'unicode61 remove_diacritics 2'
);

-- The triggers keep the index in step with messages.
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
	INSERT INTO messages_fts (rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
	INSERT INTO messages_fts (messages_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF body ON messages BEGIN
	INSERT INTO messages_fts (messages_fts, rowid, body) VALUES ('delete', old.id, old.body);
	INSERT INTO messages_fts (rowid, body) VALUES (new.id, new.body);
END;

-- The messages stored before this migration.
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
