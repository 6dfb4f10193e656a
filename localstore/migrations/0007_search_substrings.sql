-- messages_fts is rebuilt with the trigram tokenizer: a search finds what
-- it is given anywhere in a body (inside a word, and in scripts that put
-- no space between words), without case or accents. Queries shorter than
-- three characters, which the index cannot answer, are matched with LIKE.
DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;
DROP TABLE messages_fts;

CREATE VIRTUAL TABLE messages_fts USING fts5(
	body,
	content = 'messages',
	content_rowid = 'id',
	tokenize = 'trigram remove_diacritics 1'
);

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
