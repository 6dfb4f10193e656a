package localstore

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// SearchMessages returns up to limit stored messages of conv ("" for
// every conversation) whose body holds every word of query, newest first.
// A word is found anywhere in a body, inside a word too and in any
// script; words of three characters or more without case or accents,
// shorter ones without case in ASCII. Messages still in the outbox are not
// searched. An edited message is found by its text as it stands, a
// deleted one no more. A query with no word finds nothing.
func (s *Store) SearchMessages(conv, query string, limit int) ([]Message, error) {
	long, short := searchTerms(query)
	if len(long)+len(short) == 0 || limit <= 0 {
		return nil, nil
	}
	var (
		q    strings.Builder
		args []any
	)
	q.WriteString(`SELECT m.conv, COALESCE(m.seq, 0), m.msg_id, m.sender, m.body, m.client_ts, m.server_ts, m.kind,
		m.reply_to, m.ref, m.edited_ts, m.deleted, m.reactions, m.failed FROM `)
	if len(long) > 0 {
		q.WriteString(`messages_fts f JOIN messages m ON m.id = f.rowid WHERE messages_fts MATCH ? AND `)
		args = append(args, strings.Join(long, " "))
	} else {
		q.WriteString(`messages m WHERE `)
	}
	// Relation entries hold no text of their own to find: an edit's text
	// is found in its target, which holds it as it stands.
	q.WriteString(`m.seq IS NOT NULL AND m.` + shownKinds)
	for _, w := range short {
		q.WriteString(` AND m.body LIKE ? ESCAPE '\'`)
		args = append(args, "%"+likeEscaper.Replace(w)+"%")
	}
	if conv != "" {
		q.WriteString(` AND m.conv = ? ORDER BY m.seq DESC`)
		args = append(args, conv)
	} else {
		q.WriteString(` ORDER BY m.server_ts DESC, m.id DESC`)
	}
	q.WriteString(` LIMIT ?`)
	args = append(args, limit)
	rows, err := s.r.Query(q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", conv, err)
	}
	return scanMessages(rows, nil)
}

// minIndexedTerm is the shortest word the trigram index finds.
const minIndexedTerm = 3

// searchTerms splits what the user typed at spaces: the words the index
// can find, as FTS5 strings (quoted, so that no operator or syntax error
// can come from the user), and the shorter ones, as typed.
func searchTerms(query string) (long, short []string) {
	for _, w := range strings.Fields(query) {
		if utf8.RuneCountInString(w) < minIndexedTerm {
			short = append(short, w)
			continue
		}
		long = append(long, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
	}
	return long, short
}

// likeEscaper makes a word literal in a LIKE pattern that escapes with \.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
