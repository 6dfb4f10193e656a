-- Groups: a membership version on the conversation (a write computed from
-- one membership detects a change in between), the seq each member joined
-- at (the first message it may read), and the keys that make a retried
-- create_group return the first one's group.

ALTER TABLE conversations ADD COLUMN members_version INTEGER NOT NULL DEFAULT 0;

ALTER TABLE message_status ADD COLUMN joined_seq INTEGER NOT NULL DEFAULT 0;

CREATE TABLE group_keys (
    creator TEXT NOT NULL,
    key     TEXT NOT NULL,
    conv    TEXT NOT NULL,
    PRIMARY KEY (creator, key)
) WITHOUT ROWID;
