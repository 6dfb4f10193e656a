-- before is the session object as it stood before the pending operation
-- was applied (JSON; empty for operations kept by an older version): what
-- a refusal from the server puts back of the fields the operation changed.
ALTER TABLE pending_ops ADD COLUMN before TEXT NOT NULL DEFAULT '';
