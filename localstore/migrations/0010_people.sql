-- people holds the display names of the users the profile learned from
-- presence answers, so that the list and the chats show them from the
-- first paint, before the server answers again.
CREATE TABLE people (
	user TEXT PRIMARY KEY,
	name TEXT NOT NULL
) WITHOUT ROWID;

-- A direct session stored before sessions carried "request" lacks it. Its
-- active_ts goes to 0 and the sync cursors go, so that the next sync is a
-- full one and the server's copy of each such session, request flag and
-- all, replaces the stored one (what the device saw live is kept:
-- PutSessions).
UPDATE sessions SET active_ts = 0, object = json_set(object, '$.active_ts', 0)
	WHERE conv LIKE 'd:%' AND json_type(object, '$.request') IS NULL;
DELETE FROM meta WHERE key LIKE 'cursor:%'
	AND EXISTS (SELECT 1 FROM sessions WHERE active_ts = 0 AND conv LIKE 'd:%');
