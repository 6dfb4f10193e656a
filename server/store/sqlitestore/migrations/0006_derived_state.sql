-- The domain moved above storage (package engine): the database keeps the
-- log and derived state written behind it.
--
-- Each conversation's derived watermark: every message up to it has its
-- derived rows written. Existing conversations were derived in the same
-- transaction as their messages.
ALTER TABLE conversations ADD COLUMN derived_seq INTEGER NOT NULL DEFAULT 0;
UPDATE conversations SET derived_seq = max_seq;
CREATE INDEX conversations_unrepaired ON conversations (conv) WHERE derived_seq < max_seq;

-- A group's members, written with the system message that tells of each
-- change; boundary rows (message_status) are derived from them.
CREATE TABLE group_members (
    conv       TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    joined_seq INTEGER NOT NULL,
    PRIMARY KEY (conv, user_id)
) WITHOUT ROWID;
INSERT INTO group_members (conv, user_id, joined_seq)
    SELECT ms.conv, ms.user_id, ms.joined_seq
    FROM message_status ms JOIN conversations c ON c.conv = ms.conv
    WHERE c.kind = 'group';

-- Each group change, by the seq of its system message: what repair applies
-- again when a crash cut its derived rows short.
CREATE TABLE group_changes (
    conv   TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    change TEXT NOT NULL,
    PRIMARY KEY (conv, seq)
) WITHOUT ROWID;

-- Totals are written behind, newest wins: the session timestamp they are
-- as of.
ALTER TABLE unread_totals ADD COLUMN at INTEGER NOT NULL DEFAULT 0;
