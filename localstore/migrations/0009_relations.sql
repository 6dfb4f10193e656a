-- Replies and relation entries (edits, deletions for everyone, reactions):
-- a message's reply_to, and a relation entry's target, by seq (ref) or,
-- for one of the profile's own entries whose target is still in the
-- outbox, by the target's msg_id (target_id) until that takes its seq.
-- A target keeps its state as it stands (body, edited_ts, deleted and the
-- reactions as JSON); base is the target as the server gave it (JSON, ''
-- until a relation entry applies to it), from which the state is derived
-- again whenever an entry arrives, is sent or is refused.
ALTER TABLE messages ADD COLUMN reply_to INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN ref INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN target_id TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN edited_ts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN reactions TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN base TEXT NOT NULL DEFAULT '';
CREATE INDEX messages_by_ref ON messages (conv, ref) WHERE ref != 0;
CREATE INDEX messages_by_target ON messages (conv, target_id) WHERE target_id != '';
-- Events (system messages and relation entries) never count as unread:
-- the unread count of a session discounts those it holds.
CREATE INDEX messages_events ON messages (conv, seq) WHERE kind != '';

-- What a relation entry or a reply in the outbox is sent with.
ALTER TABLE outbox ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN ref INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN reply_to INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN target_id TEXT NOT NULL DEFAULT '';
