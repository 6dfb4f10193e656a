-- The tick minimum is kept by the engine in memory, and a conversation's
-- members are read through group_members: nothing looks boundaries up by
-- conversation any more, and each index cost two B-tree writes on every
-- boundary move.
DROP INDEX message_status_conv_delivered;
DROP INDEX message_status_conv_read;
