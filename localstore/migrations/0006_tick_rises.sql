-- tick_rises records when this device saw a conversation's tick boundaries
-- rise (a status push, a sync): the first row whose boundary covers a
-- message says when it was delivered to, or read by, every other member,
-- as far as this device knows.
CREATE TABLE tick_rises (
	conv          TEXT NOT NULL,
	delivered_seq INTEGER NOT NULL,
	read_seq      INTEGER NOT NULL,
	at            INTEGER NOT NULL
);
CREATE INDEX tick_rises_by_conv ON tick_rises (conv, delivered_seq);
