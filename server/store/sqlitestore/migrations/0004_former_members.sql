-- What a user who left a group (or was removed) last saw of it: its
-- session keeps showing that title and those ticks, not the group's later
-- ones. The row goes when the user is added back.

CREATE TABLE former_members (
    user_id        TEXT NOT NULL,
    conv           TEXT NOT NULL,
    title          TEXT NOT NULL,
    tick_delivered INTEGER NOT NULL,
    tick_read      INTEGER NOT NULL,
    PRIMARY KEY (user_id, conv)
) WITHOUT ROWID;
