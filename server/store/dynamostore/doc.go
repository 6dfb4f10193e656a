// Package dynamostore is a store.Backend (and store.Archiver, auth.Epochs,
// store.Backend.AppendAt) on DynamoDB. A conversation's owner node gives its
// messages their seqs (AppendAt); Append and group changes take theirs
// from a Redis INCR counter. Many processes may share the tables. No write spans two items (no TransactWriteItems): every write is
// a conditional PutItem/UpdateItem/DeleteItem, ordered so that a crash
// between any two loses nothing acknowledged and duplicates nothing
// visible.
//
// # Tables (prefix + name)
//
//	messages            PK conversation_id (S), SK seq (N): msg_id, sender, body,
//	                    client_ts, server_ts, kind, reply_to, ref; s3_ref once
//	                    archived (body removed); group_change (JSON) on a group's
//	                    system message; state (JSON store.TargetState) on a
//	                    message relation entries changed.
//	message_ids         PK conversation_id, SK msg_id: seq, sender — the
//	                    idempotency index, owned by its sender.
//	conversations       PK conversation_id: kind, title, version, members (map
//	                    user → joined seq, groups only), max_seq, derived_seq,
//	                    tick_delivered, tick_read, behind (sparse: "1" while
//	                    derived_seq may be below max_seq; GSI "unrepaired" on
//	                    it), pending_change (a group change committed whose
//	                    system message is not written yet); a direct
//	                    chat's boundaries: bd_a/br_a, bd_b/br_b (delivered,
//	                    read of the member first and second in its id).
//	message_status      PK user_id, SK conversation_id: last_delivered_seq,
//	                    last_read_seq, joined_seq (a group's members; a
//	                    direct chat's rows from before its boundaries moved
//	                    to its item are still read, the higher counting).
//	pending_deliveries  PK receiver_id, SK conversation_id: first_undelivered_seq.
//	sessions            PK user_id, SK conversation_id: the session.State;
//	                    LSIs: by_list (list_active = sub_biz "#" zero-padded
//	                    active_ts: a sync page is one key range, a list's
//	                    total the sum over its prefix), by_timed_mute
//	                    (sparse timed_mute = mute_until of a timed mute).
//	                    A user's clock and unread totals are not stored:
//	                    User sums them from the user's sessions (totals.go).
//	users               PK user_id, SK item:
//	                    "account" (category, sub_biz), "epoch" (epoch, rev,
//	                    rev_part; GSI by_rev); user "#revocations" item
//	                    "counter" holds the revocation revision.
//	former_members      PK user_id, SK conversation_id: title.
//	group_keys          PK creator, SK group_key: conversation_id.
//
// Redis holds one counter per conversation, prefix + "seq:" + conv.
//
// # Append and its crash points
//
//  1. Put message_ids (conv, msg_id) → sender, reserved_at, if absent.
//     Present → resume (below). The key comes before the seq, so that a
//     repeat — even one racing its first attempt — takes no seq.
//  2. INCR the counter → seq. A result of 1 while seq 1 is stored means
//     Redis lost the counter: it is re-seeded (a Lua script raising it to
//     the newest stored seq, then INCR) from max(newest message, max_seq).
//  3. Record seq on the reservation if it has none (else resume: another
//     attempt took it over).
//  4. Put the message at seq if absent (the guard against reusing a seq).
//     Taken by another message (a lost or rolled-back counter) → re-seed,
//     move the reservation to the new seq (conditional on its old seq),
//     try again.
//  5. Raise the conversation's max_seq to seq if lower, set behind (a
//     direct chat's item is created here on its first message).
//
// Resume reads the reservation: another sender's → ErrMsgIDTaken; with a
// seq → as below; without one → the first attempt is between 1 and 3: wait
// for it (polling) until reserved_at + 2 s, then take it over (INCR, record
// the seq conditionally).
//
// A crash after 1 or 2: a reservation without a seq (and after 2 an unused
// seq: a gap, history skips it); the retry takes it over. After 3: a
// reservation with no message; the retry writes the message at the
// reserved seq if still free, else at a fresh one (moving the
// reservation). After 4: the message is stored, max_seq not raised; the
// retry finds it, raises max_seq and returns it as a duplicate (only the
// attempt whose write of the message succeeded answers it new: a repeat
// racing its first attempt must not). The conversation then shows as
// behind its derived watermark, and the engine derives the message: the
// repair of the conversation's next owner, or of an engine at start.
//
// # Relation entries and their crash points
//
// An edit, deletion or reaction is appended as above, then (6) applied to
// its target (ApplyRelation): the target's item is read, its state
// (store.TargetState) changed and written back on condition that it is
// the state read (read again if not), with its body removed on a
// deletion; then each erased edit entry's body is removed, and erased
// bodies already archived are rewritten empty in the blob store. A crash
// after 5 and before 6 ends leaves the conversation behind (step 5 set
// it): the engine's repair applies every relation entry after the
// watermark again, and a retry of the send (finishStored) applies it too.
// Every step is idempotent, and applying an older entry after a newer one
// changes nothing, so no TransactWriteItems is needed.
//
// # ChangeGroup and its crash points
//
// Create: put group_keys (creator, key) → conv if absent (present: the
// key's group is returned, Existing, or — when its item was never written
// — finished by this call); put the system message at seq 1 with the
// change; reserve its msg_id; put the conversation's item if absent,
// which makes the group exist. A crash before the item leaves only rows
// nothing reads (the group does not exist); a retried create with the same
// key finishes it, adopting the message already written.
//
// Change: read the item (finishing a pending change first), check the
// version and the members, take a seq (INCR) and reserve the system
// message's msg_id, then one conditional UpdateItem commits the change on
// the item: members, version, title, max_seq, behind and pending_change
// (the seq, message and change), on condition that the version is the one
// read and no change is pending. Then the system message is put at its
// seq and pending_change removed. A crash after the commit leaves the
// change pending: whoever reads the item next (Conversation, ChangeGroup,
// a keyed create) writes the message and clears it, and Unrepaired lists
// the conversation. If another message took the seq meanwhile (a lost
// counter), the pending change moves to a fresh seq with its added
// members' joined seqs. The change is so atomic for every reader of the
// item; the system message may appear a moment after the membership.
//
// # Derived rows (Apply)
//
// Each row of store.Derived is its own conditional write, 16 at a time,
// but for a direct chat's boundaries, raised on its conversation's item
// in the write of its head when the batch carries it (direct.go): a group
// member's boundary merge raises both boundaries in one update when the
// row exists and both rise, else puts the row if absent, else raises each
// on its own (condition "< :new"); a Join puts the row if absent or of an
// earlier joining first; Gone deletes on joined_seq < Before; pending rows put if
// absent and clear on first_undelivered_seq <= Clear (both at once: one
// put on condition that the row is absent or cleared); sessions put if
// newer (epoch, then active_ts), ticks max-merged at the same active_ts;
// a conversation's ticks and derived_seq rise together or each on its
// own, and behind is removed once max_seq <= derived_seq (tried only when
// the item the raise returned says so). A condition that does not hold
// means "already newer", not an error. Totals are not written: a total is
// the sum of its list's sessions, and is summed where it is read.
//
// The writes go in three steps, each after the one before is written, so
// that a process killed between any two leaves nothing a reader takes for
// finished: (1) each user's sessions in ascending active_ts (so the clock,
// the newest stored, never runs ahead of a session lost); (2)
// boundaries, pending rows and former members' views; (3) the
// conversations' rows, with the boundaries of direct chats whose head the
// batch carries. A total cannot disagree with the sessions stored,
// whatever was cut. A conversation's derived_seq is written last: killed
// before, the conversation stays behind and the repair of its next owner,
// or of an engine at start, derives its messages again (every row is a
// merge: what was written already changes nothing). A cut can also leave
// a sub-business gateway's unread count (a session of its own) behind the
// sum of the sessions filed under it, when the member's session was
// written and the gateway's not: the engine's next owner of the user sets
// the gateway to that sum as it reads it (engine.mendGateway).
//
// # Reads
//
// Reads are strongly consistent except the two GSIs: Unrepaired checks
// each candidate on its item; RevokedSince may lag. Multi-item reads use
// BatchGetItem (members' rows, sessions, a page's last messages and
// conversations), ranges use Query. A sync page is not one snapshot: each
// item is read consistently on its own. Archived bodies (s3_ref) are read
// back from the blob store in History, Message, Pending's replay (through
// History) and SessionPage's last message.
//
// Archive scans the messages table (a filtered Scan: a batch job, run
// rarely), puts each old body to the blob store under blob.Key, then sets
// s3_ref and removes the body on condition that s3_ref is not set.
//
// Known limits: a crash (or a failed write) after INCR leaves a gap in the
// seqs; a counter rolled
// back (not lost) onto a gap may fill it with a newer message;
// RevokeTokens takes its revision before it moves the epoch, so two
// concurrent revocations may become visible out of revision order.
package dynamostore
