package sqlitestore

// Every statement the store runs often, all prepared when the store opens
// (see stmtCache): the writer's on its one connection, the readers' on the
// pool. Reads built from a variable list (a batch of users) are not
// prepared.

const messageColumns = `conv, seq, msg_id, sender, body, client_ts, server_ts, kind, reply_to, ref_seq`

// messageReadColumns are what a read of messages scans (scanMessage):
// the columns of a message, where its body went when archived, and what
// relation entries made of it.
const messageReadColumns = messageColumns + `, s3_ref, state`

// The writer's transaction control.
const (
	qSavepoint   = `SAVEPOINT op`
	qRollbackTo  = `ROLLBACK TO op`
	qReleaseSave = `RELEASE op`
)

// The log.
const (
	qSeqOfMsgID    = `SELECT seq FROM message_ids WHERE conv = ? AND msg_id = ?`
	qMessageAt     = `SELECT ` + messageReadColumns + ` FROM messages WHERE conv = ? AND seq = ?`
	qSenders       = `SELECT DISTINCT sender FROM messages WHERE conv = ? AND seq > ? AND seq <= ?`
	qInsertMessage = `INSERT INTO messages (` + messageColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (conv, seq) DO NOTHING`
	qInsertMsgID   = `INSERT INTO message_ids (conv, msg_id, seq) VALUES (?, ?, ?)`
	qRaiseMaxSeq   = `UPDATE conversations SET max_seq = max(max_seq, ?) WHERE conv = ?`
	qMaxSeq        = `SELECT max_seq FROM conversations WHERE conv = ?`
	qConvHead      = `SELECT kind, max_seq, members_version FROM conversations WHERE conv = ?`
	qInsertConv    = `INSERT INTO conversations (conv, kind, created_ts) VALUES (?, ?, ?)`
	qHistoryAfter  = `SELECT ` + messageReadColumns + ` FROM messages WHERE conv = ? AND seq > ? ORDER BY seq ASC LIMIT ?`
	qHistoryBefore = `SELECT ` + messageReadColumns + ` FROM messages WHERE conv = ? AND seq < ? AND seq >= ? ORDER BY seq DESC LIMIT ?`
)

// Conversations and groups.
const (
	qConversation = `SELECT kind, title, members_version, max_seq, derived_seq, tick_delivered, tick_read
		FROM conversations WHERE conv = ?`
	// The members of a group with their boundary and pending rows.
	qGroupMembers = `SELECT gm.user_id, gm.joined_seq,
			COALESCE(ms.last_delivered_seq, 0), COALESCE(ms.last_read_seq, 0), ms.user_id IS NOT NULL,
			p.first_undelivered_seq IS NOT NULL, COALESCE(p.first_undelivered_seq, 0)
		FROM group_members gm
		LEFT JOIN message_status ms ON ms.user_id = gm.user_id AND ms.conv = gm.conv
		LEFT JOIN pending_deliveries p ON p.receiver = gm.user_id AND p.conv = gm.conv
		WHERE gm.conv = ? ORDER BY gm.user_id`
	// A direct chat's member rows, looked up for each of its two users.
	qDirectMember = `SELECT COALESCE((SELECT last_delivered_seq FROM message_status WHERE user_id = ?1 AND conv = ?2), 0),
			COALESCE((SELECT last_read_seq FROM message_status WHERE user_id = ?1 AND conv = ?2), 0),
			EXISTS (SELECT 1 FROM message_status WHERE user_id = ?1 AND conv = ?2),
			EXISTS (SELECT 1 FROM pending_deliveries WHERE receiver = ?1 AND conv = ?2),
			COALESCE((SELECT first_undelivered_seq FROM pending_deliveries WHERE receiver = ?1 AND conv = ?2), 0)`
	qMemberNames   = `SELECT user_id FROM group_members WHERE conv = ? ORDER BY user_id`
	qUnrepaired    = `SELECT conv FROM conversations WHERE derived_seq < max_seq`
	qGroupKeyGet   = `SELECT conv FROM group_keys WHERE creator = ? AND key = ?`
	qGroupKeyPut   = `INSERT INTO group_keys (creator, key, conv) VALUES (?, ?, ?)`
	qInsertGroup   = `INSERT INTO conversations (conv, kind, title, members_version, created_ts) VALUES (?, 'group', ?, ?, ?)`
	qGroupOf       = `SELECT title, members_version, max_seq FROM conversations WHERE conv = ? AND kind = 'group'`
	qGroupJoined   = `SELECT user_id, joined_seq FROM group_members WHERE conv = ?`
	qSetGroupState = `UPDATE conversations SET title = ?, members_version = ? WHERE conv = ?`
	qJoinGroup     = `INSERT INTO group_members (conv, user_id, joined_seq) VALUES (?, ?, ?)`
	qLeaveGroup    = `DELETE FROM group_members WHERE conv = ? AND user_id = ?`
	qRecordChange  = `INSERT INTO group_changes (conv, seq, change) VALUES (?, ?, ?)`
	qChangeAt      = `SELECT change FROM group_changes WHERE conv = ? AND seq = ?`
)

// Derived state, written behind (Apply): every statement an idempotent
// update.
const (
	qBoundaryMerge = `INSERT INTO message_status (user_id, conv, last_delivered_seq, last_read_seq) VALUES (?1, ?2, max(?3, ?4), ?4)
		ON CONFLICT (user_id, conv) DO UPDATE SET
			last_delivered_seq = max(last_delivered_seq, excluded.last_delivered_seq),
			last_read_seq = max(last_read_seq, excluded.last_read_seq)`
	qBoundaryJoin = `INSERT INTO message_status (user_id, conv, last_delivered_seq, last_read_seq, joined_seq) VALUES (?1, ?2, max(?3, ?4), ?4, ?5)
		ON CONFLICT (user_id, conv) DO UPDATE SET
			last_delivered_seq = CASE WHEN excluded.joined_seq > joined_seq THEN excluded.last_delivered_seq ELSE max(last_delivered_seq, excluded.last_delivered_seq) END,
			last_read_seq = CASE WHEN excluded.joined_seq > joined_seq THEN excluded.last_read_seq ELSE max(last_read_seq, excluded.last_read_seq) END,
			joined_seq = max(joined_seq, excluded.joined_seq)`
	qBoundaryGone = `DELETE FROM message_status WHERE user_id = ? AND conv = ? AND joined_seq < ?`
	qPendingPut   = `INSERT OR IGNORE INTO pending_deliveries (receiver, conv, first_undelivered_seq) VALUES (?, ?, ?)`
	qPendingClear = `DELETE FROM pending_deliveries WHERE receiver = ? AND conv = ? AND first_undelivered_seq <= ?`
	qSessionPut   = `INSERT INTO sessions (` + sessionColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (user_id, conv) DO UPDATE SET
			read_seq = iif(` + newerSession + `, excluded.read_seq, sessions.read_seq),
			write_seq = iif(` + newerSession + `, excluded.write_seq, sessions.write_seq),
			unread_count = iif(` + newerSession + `, excluded.unread_count, sessions.unread_count),
			write_ts = iif(` + newerSession + `, excluded.write_ts, sessions.write_ts),
			muted = iif(` + newerSession + `, excluded.muted, sessions.muted),
			mute_until = iif(` + newerSession + `, excluded.mute_until, sessions.mute_until),
			priority = iif(` + newerSession + `, excluded.priority, sessions.priority),
			deleted = iif(` + newerSession + `, excluded.deleted, sessions.deleted),
			marked_unread = iif(` + newerSession + `, excluded.marked_unread, sessions.marked_unread),
			category = iif(` + newerSession + `, excluded.category, sessions.category),
			sub_biz = iif(` + newerSession + `, excluded.sub_biz, sessions.sub_biz),
			last_conv = iif(` + newerSession + `, excluded.last_conv, sessions.last_conv),
			last_seq = iif(` + newerSession + `, excluded.last_seq, sessions.last_seq),
			request = iif(` + newerSession + `, excluded.request, sessions.request),
			tick_delivered = max(sessions.tick_delivered, excluded.tick_delivered),
			tick_read = max(sessions.tick_read, excluded.tick_read),
			active_ts = excluded.active_ts
		WHERE excluded.active_ts >= sessions.active_ts`
	qTotalPut = `INSERT INTO unread_totals (user_id, sub_biz, total, at) VALUES (?, ?, ?, ?)
		ON CONFLICT (user_id, sub_biz) DO UPDATE SET total = excluded.total, at = excluded.at
		WHERE excluded.at > unread_totals.at`
	qConvDerived = `UPDATE conversations SET tick_delivered = max(tick_delivered, ?), tick_read = max(tick_read, ?),
		derived_seq = max(derived_seq, ?) WHERE conv = ?`
	qFormerPut    = `INSERT OR REPLACE INTO former_members (user_id, conv, title, tick_delivered, tick_read) VALUES (?, ?, ?, 0, 0)`
	qFormerDelete = `DELETE FROM former_members WHERE user_id = ? AND conv = ?`
)

// newerSession is session.Newest's test in SQL (one process: every write
// at epoch 0, so session.Merge), inside the sessions upsert: the write is
// of a newer version. At the same active_ts (the
// WHERE lets it through) only the ticks merge.
const newerSession = `excluded.active_ts > sessions.active_ts`

// Users and sessions.
const sessionColumns = `user_id, conv, read_seq, write_seq, unread_count, active_ts, write_ts, muted, mute_until,
	priority, deleted, marked_unread, category, sub_biz, last_conv, last_seq, tick_delivered, tick_read, request`

const sessionColumnsS = `s.user_id, s.conv, s.read_seq, s.write_seq, s.unread_count, s.active_ts, s.write_ts, s.muted,
	s.mute_until, s.priority, s.deleted, s.marked_unread, s.category, s.sub_biz, s.last_conv, s.last_seq,
	s.tick_delivered, s.tick_read, s.request`

const (
	qLastActive  = `SELECT COALESCE(MAX(active_ts), 0) FROM sessions WHERE user_id = ?`
	qTotalsOf    = `SELECT sub_biz, total FROM unread_totals WHERE user_id = ?`
	qTotalGet    = `SELECT COALESCE((SELECT total FROM unread_totals WHERE user_id = ? AND sub_biz = ?), 0)`
	qAccountGet  = `SELECT category, sub_biz FROM accounts WHERE user_id = ?`
	qAccountPut  = `INSERT OR REPLACE INTO accounts (user_id, category, sub_biz) VALUES (?, ?, ?)`
	qPersonGet   = `SELECT last_seen, read_receipts, name, blocked, last_seen_at FROM people WHERE user_id = ?`
	qSettingsPut = `INSERT INTO people (user_id, last_seen, read_receipts, name, blocked) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (user_id) DO UPDATE SET last_seen = excluded.last_seen, read_receipts = excluded.read_receipts,
			name = excluded.name, blocked = excluded.blocked`
	qLastSeenPut = `INSERT INTO people (user_id, last_seen_at) VALUES (?, ?)
		ON CONFLICT (user_id) DO UPDATE SET last_seen_at = excluded.last_seen_at`
	qExpiredMutes = `SELECT conv FROM sessions WHERE user_id = ? AND muted = 1 AND mute_until > 0 AND mute_until <= ?`
	qPendingOf    = `SELECT p.conv, p.first_undelivered_seq, COALESCE(st.last_delivered_seq, 0), c.max_seq
		FROM pending_deliveries p
		JOIN conversations c ON c.conv = p.conv
		LEFT JOIN message_status st ON st.user_id = p.receiver AND st.conv = p.conv
		WHERE p.receiver = ?
		ORDER BY p.conv`
	qFormerOf = `SELECT title FROM former_members WHERE user_id = ? AND conv = ?`
	qIsMember = `SELECT EXISTS (SELECT 1 FROM group_members WHERE conv = ? AND user_id = ?)`
)

// qSessionRows reads sessions with each one's last message and what it
// shows of its conversation; qSyncPage and qOneSession complete it.
const qSessionRows = `SELECT ` + sessionColumnsS + `,
		m.seq, m.msg_id, m.sender, m.body, m.client_ts, m.server_ts, m.kind, m.reply_to, m.ref_seq, m.s3_ref, m.state,
		COALESCE(c.title, '')
	FROM sessions s
	LEFT JOIN messages m ON m.conv = s.last_conv AND m.seq = s.last_seq
	LEFT JOIN conversations c ON c.conv = s.conv`

const (
	qSyncPage   = qSessionRows + ` WHERE s.user_id = ? AND s.sub_biz = ? AND s.active_ts > ? ORDER BY s.active_ts LIMIT ?`
	qOneSession = qSessionRows + ` WHERE s.user_id = ? AND s.conv = ?`
)

// Archival (Archive): the messages to move, walked in rowid order, and
// the update that records one moved unless another run did first.
const (
	qArchiveCandidates = `SELECT rowid, conv, seq, body FROM messages
		WHERE rowid > ? AND server_ts < ? AND s3_ref = '' ORDER BY rowid LIMIT ?`
	qArchiveMark = `UPDATE messages SET body = '', s3_ref = ? WHERE conv = ? AND seq = ? AND s3_ref = ''`
	qStateAt     = `SELECT state FROM messages WHERE conv = ? AND seq = ?`
)

// Relation entries applied to their targets (relations.go).
const (
	qTargetAt   = `SELECT state, s3_ref FROM messages WHERE conv = ? AND seq = ?`
	qSetState   = `UPDATE messages SET state = ? WHERE conv = ? AND seq = ?`
	qEraseBody  = `UPDATE messages SET body = '' WHERE conv = ? AND seq = ?`
	qEraseEntry = `UPDATE messages SET body = '', state = ? WHERE conv = ? AND seq = ? RETURNING s3_ref`
)

// Token revocation and operations.
const (
	qTokenEpoch   = `SELECT epoch FROM token_epochs WHERE user_id = ?`
	qRevokeTokens = `INSERT INTO token_epochs (user_id, epoch, rev)
		VALUES (?, 1, (SELECT COALESCE(MAX(rev), 0) + 1 FROM token_epochs))
		ON CONFLICT (user_id) DO UPDATE SET epoch = epoch + 1, rev = excluded.rev
		RETURNING epoch`
	qRevokedSince = `SELECT user_id, epoch, rev FROM token_epochs WHERE rev > ? ORDER BY rev`
	qPendingCount = `SELECT COUNT(*) FROM pending_deliveries`
	qProbeInsert  = `INSERT OR REPLACE INTO meta (key, value) VALUES ('probe', ?)`
	qProbeDelete  = `DELETE FROM meta WHERE key = 'probe'`
)

// writerQueries are prepared on the writer's connection at open.
var writerQueries = []string{
	qSavepoint, qRollbackTo, qReleaseSave,
	qSeqOfMsgID, qMessageAt, qInsertMessage, qInsertMsgID, qRaiseMaxSeq, qConvHead, qInsertConv,
	qGroupKeyGet, qGroupKeyPut, qInsertGroup, qGroupOf, qGroupJoined, qSetGroupState,
	qJoinGroup, qLeaveGroup, qRecordChange, qIsMember,
	qBoundaryMerge, qBoundaryJoin, qBoundaryGone, qPendingPut, qPendingClear,
	qSessionPut, qTotalPut, qConvDerived, qFormerPut, qFormerDelete,
	qAccountPut, qSettingsPut, qLastSeenPut, qRevokeTokens, qProbeInsert, qProbeDelete,
	qArchiveMark, qTargetAt, qSetState, qEraseBody, qEraseEntry,
}

// readerQueries are prepared on the reader pool at open.
var readerQueries = []string{
	qMessageAt, qHistoryAfter, qHistoryBefore, qSenders, qMaxSeq,
	qConversation, qGroupMembers, qDirectMember, qUnrepaired, qChangeAt,
	qLastActive, qTotalsOf, qTotalGet, qAccountGet, qPersonGet, qExpiredMutes, qPendingOf, qFormerOf, qMemberNames,
	qSyncPage, qOneSession,
	qTokenEpoch, qRevokedSince, qPendingCount,
	qArchiveCandidates, qStateAt,
}
