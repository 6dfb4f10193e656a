-- The database's identity: a random id, also kept in the marker file beside
-- the database (im.db.id), so that a missing, emptied or swapped database
-- is noticed at start instead of silently starting empty.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- Token revocation: a user's tokens minted in an epoch below the current
-- one are refused. rev orders the revocations, so that a running server
-- can read those made since it last looked.
CREATE TABLE token_epochs (
    user_id TEXT PRIMARY KEY,
    epoch   INTEGER NOT NULL,
    rev     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX token_epochs_by_rev ON token_epochs (rev);
