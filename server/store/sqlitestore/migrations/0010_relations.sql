-- Replies and relation entries (edits, deletions, reactions): reply_to and
-- ref_seq are the seqs a message replies to and a relation entry acts on
-- (0 for none); state is what relation entries made of the message
-- (store.TargetState as JSON: the latest edit, deleted, the standing
-- reactions; an edit entry's erasure), '' when nothing did. A target's
-- state is kept with its row, so that a page of history reads nothing
-- more.
ALTER TABLE messages ADD COLUMN reply_to INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN ref_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN state TEXT NOT NULL DEFAULT '';
