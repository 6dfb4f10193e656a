-- Cold storage (seed 002's s3_ref): an archived message keeps its seq,
-- sender and timestamps here, its body moves to the blob store under the
-- key s3_ref names, and body is emptied. '' means the body is in the row.
ALTER TABLE messages ADD COLUMN s3_ref TEXT NOT NULL DEFAULT '';
