-- A direct session's request flag (session.State.Request): its first
-- message came from the other member and the user has not written there
-- since. Sessions stored before it was kept are no requests.
ALTER TABLE sessions ADD COLUMN request INTEGER NOT NULL DEFAULT 0;
