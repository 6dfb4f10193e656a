package sqlitestore

// Every statement the store runs, all prepared when the store opens (see
// stmtCache): the writer's on its one connection, the readers' on the pool.

const messageColumns = `conv, seq, msg_id, sender, body, client_ts, server_ts, kind`

const (
	qSavepoint   = `SAVEPOINT op`
	qRollbackTo  = `ROLLBACK TO op`
	qReleaseSave = `RELEASE op`

	qSeqOfMsgID    = `SELECT seq FROM message_ids WHERE conv = ? AND msg_id = ?`
	qMessageAt     = `SELECT ` + messageColumns + ` FROM messages WHERE conv = ? AND seq = ?`
	qInsertMessage = `INSERT INTO messages (` + messageColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	qInsertMsgID   = `INSERT INTO message_ids (conv, msg_id, seq) VALUES (?, ?, ?)`
	qSetMaxSeq     = `UPDATE conversations SET max_seq = ? WHERE conv = ?`
	qConversation  = `SELECT max_seq, tick_delivered, tick_read, members_version, title FROM conversations WHERE conv = ?`
	qInsertConv    = `INSERT INTO conversations (conv, kind, created_ts) VALUES (?, ?, ?)`
	qInsertMember  = `INSERT OR IGNORE INTO message_status (user_id, conv) VALUES (?, ?)`
	qBoundaries    = `SELECT last_delivered_seq, last_read_seq FROM message_status WHERE user_id = ? AND conv = ?`
	qSetBoundaries = `UPDATE message_status SET last_delivered_seq = ?, last_read_seq = ? WHERE user_id = ? AND conv = ?`
	qMinDelivered  = `SELECT COALESCE(MIN(last_delivered_seq), 0) FROM message_status WHERE conv = ?`
	qMinRead       = `SELECT COALESCE(MIN(last_read_seq), 0) FROM message_status WHERE conv = ?`
	qSetTicks      = `UPDATE conversations SET tick_delivered = ?, tick_read = ? WHERE conv = ?`
	qDeletePending = `DELETE FROM pending_deliveries WHERE receiver = ? AND conv = ?`
	// Every member but the sender gets a row, if it has none, at its own
	// first undelivered seq: the seq after its delivered boundary.
	qPutPendingForRecipients = `INSERT OR IGNORE INTO pending_deliveries (receiver, conv, first_undelivered_seq)
		SELECT user_id, conv, last_delivered_seq + 1 FROM message_status WHERE conv = ? AND user_id <> ?`
)

// Groups.
const (
	qGroupKeyGet   = `SELECT conv FROM group_keys WHERE creator = ? AND key = ?`
	qGroupKeyPut   = `INSERT INTO group_keys (creator, key, conv) VALUES (?, ?, ?)`
	qInsertGroup   = `INSERT INTO conversations (conv, kind, title, created_ts) VALUES (?, 'group', ?, ?)`
	qSetGroupTitle = `UPDATE conversations SET title = ? WHERE conv = ?`
	qBumpMembers   = `UPDATE conversations SET members_version = members_version + 1 WHERE conv = ?`
	qJoinMember    = `INSERT INTO message_status (user_id, conv, last_delivered_seq, last_read_seq, joined_seq) VALUES (?, ?, ?, ?, ?)`
	qRemoveMember  = `DELETE FROM message_status WHERE user_id = ? AND conv = ?`
	qMembersOf     = `SELECT user_id FROM message_status WHERE conv = ? ORDER BY user_id`
	qMembershipOf  = `SELECT joined_seq FROM message_status WHERE conv = ? AND user_id = ?`
	qGroupOf       = `SELECT title, members_version FROM conversations WHERE conv = ? AND kind = 'group'`
	qFormerPut     = `INSERT OR REPLACE INTO former_members (user_id, conv, title, tick_delivered, tick_read) VALUES (?, ?, ?, ?, ?)`
	qFormerDelete  = `DELETE FROM former_members WHERE user_id = ? AND conv = ?`
	qFormerOf      = `SELECT title, tick_delivered, tick_read FROM former_members WHERE user_id = ? AND conv = ?`
)

// writerQueries are prepared on the writer's connection at open.
var writerQueries = []string{
	qSavepoint, qRollbackTo, qReleaseSave,
	qSeqOfMsgID, qMessageAt, qInsertMessage, qInsertMsgID, qSetMaxSeq,
	qConversation, qInsertConv, qInsertMember, qBoundaries, qSetBoundaries,
	qMinDelivered, qMinRead, qSetTicks, qDeletePending, qPutPendingForRecipients,
	qSessionGet, qSessionPut, qLastActive, qTotalAdd, qTotalGet,
	qAccountGet, qAccountPut, qExpiredMutes, qSendersInRange,
	qRevokeTokens, qProbeInsert, qProbeDelete,
	qGroupKeyGet, qGroupKeyPut, qInsertGroup, qSetGroupTitle, qBumpMembers,
	qJoinMember, qRemoveMember, qMembersOf, qGroupOf, qFormerPut, qFormerDelete, qFormerOf,
}

// readerQueries are prepared on the reader pool at open.
var readerQueries = []string{
	qHistoryAfter, qHistoryBefore, qPendingOf, qReceiptsOf, qSyncPage, qTotalGet,
	qExpiredMutes, qGroupOf, qMembersOf, qMembershipOf, qFormerOf,
	qTokenEpoch, qRevokedSince, qPendingCount,
}

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

// Reads.
const (
	qHistoryAfter  = `SELECT ` + messageColumns + ` FROM messages WHERE conv = ? AND seq > ? ORDER BY seq ASC LIMIT ?`
	qHistoryBefore = `SELECT ` + messageColumns + ` FROM messages WHERE conv = ? AND seq < ? AND seq >= ? ORDER BY seq DESC LIMIT ?`
	qPendingOf     = `SELECT p.conv, p.first_undelivered_seq, COALESCE(st.last_delivered_seq, 0), c.max_seq
		FROM pending_deliveries p
		JOIN conversations c ON c.conv = p.conv
		LEFT JOIN message_status st ON st.user_id = p.receiver AND st.conv = p.conv
		WHERE p.receiver = ?
		ORDER BY p.conv`
	qReceiptsOf = `SELECT user_id, last_delivered_seq, last_read_seq FROM message_status WHERE conv = ? ORDER BY user_id`
)

// Sessions.
const sessionColumns = `user_id, conv, read_seq, write_seq, unread_count, active_ts, write_ts, muted, mute_until,
	priority, deleted, marked_unread, category, sub_biz, last_conv, last_seq`

const (
	qSessionGet = `SELECT ` + sessionColumns + ` FROM sessions WHERE user_id = ? AND conv = ?`
	qSessionPut = `INSERT OR REPLACE INTO sessions (` + sessionColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qLastActive = `SELECT COALESCE(MAX(active_ts), 0) FROM sessions WHERE user_id = ?`
	qTotalAdd   = `INSERT INTO unread_totals (user_id, sub_biz, total) VALUES (?, ?, ?)
		ON CONFLICT (user_id, sub_biz) DO UPDATE SET total = total + excluded.total`
	qTotalGet       = `SELECT COALESCE((SELECT total FROM unread_totals WHERE user_id = ? AND sub_biz = ?), 0)`
	qAccountGet     = `SELECT category, sub_biz FROM accounts WHERE user_id = ?`
	qAccountPut     = `INSERT OR REPLACE INTO accounts (user_id, category, sub_biz) VALUES (?, ?, ?)`
	qExpiredMutes   = `SELECT conv FROM sessions WHERE user_id = ? AND muted = 1 AND mute_until > 0 AND mute_until <= ?`
	qSendersInRange = `SELECT DISTINCT sender FROM messages WHERE conv = ? AND seq > ? AND seq <= ?
		AND sender IN (SELECT user_id FROM message_status WHERE conv = ?)`
)

// qSyncPage reads one page of a list with each session's last message and
// its conversation's ticks.
const qSyncPage = `SELECT ` + sessionColumnsS + `,
		m.seq, m.msg_id, m.sender, m.body, m.client_ts, m.server_ts, m.kind,
		COALESCE(c.tick_delivered, 0), COALESCE(c.tick_read, 0), COALESCE(c.title, '')
	FROM sessions s
	LEFT JOIN messages m ON m.conv = s.last_conv AND m.seq = s.last_seq
	LEFT JOIN conversations c ON c.conv = s.conv
	WHERE s.user_id = ? AND s.sub_biz = ? AND s.active_ts > ?
	ORDER BY s.active_ts
	LIMIT ?`

const sessionColumnsS = `s.user_id, s.conv, s.read_seq, s.write_seq, s.unread_count, s.active_ts, s.write_ts, s.muted,
	s.mute_until, s.priority, s.deleted, s.marked_unread, s.category, s.sub_biz, s.last_conv, s.last_seq`
