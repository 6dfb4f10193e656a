-- A session keeps the conversation's ticks as of its last change, and
-- every rise of the tick minimum changes every member's session: a session
-- version (its active_ts) shows one content. A user who left keeps the
-- ticks of when it left, so former_members' tick columns are no longer
-- read.
ALTER TABLE sessions ADD COLUMN tick_delivered INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN tick_read INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET
    tick_delivered = COALESCE((SELECT tick_delivered FROM conversations c WHERE c.conv = sessions.conv), 0),
    tick_read = COALESCE((SELECT tick_read FROM conversations c WHERE c.conv = sessions.conv), 0);
UPDATE sessions SET
    tick_delivered = (SELECT tick_delivered FROM former_members f WHERE f.user_id = sessions.user_id AND f.conv = sessions.conv),
    tick_read = (SELECT tick_read FROM former_members f WHERE f.user_id = sessions.user_id AND f.conv = sessions.conv)
    WHERE EXISTS (SELECT 1 FROM former_members f WHERE f.user_id = sessions.user_id AND f.conv = sessions.conv);
