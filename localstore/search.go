package localstore

import (
	"fmt"
	"strings"
	"unicode"
)

// SearchMessages returns up to limit stored messages of conv whose body
// holds every word of query (as a word or the start of one, without case
// or accents), newest first. Messages still in the outbox are not
// searched. A query with no word finds nothing.
func (s *Store) SearchMessages(conv, query string, limit int) ([]Message, error) {
	match := ftsQuery(query)
	if match == "" || limit <= 0 {
		return nil, nil
	}
	rows, err := s.r.Query(`SELECT m.conv, COALESCE(m.seq, 0), m.msg_id, m.sender, m.body, m.client_ts, m.server_ts, m.kind, m.failed
		FROM messages_fts f JOIN messages m ON m.id = f.rowid
		WHERE messages_fts MATCH ? AND m.conv = ? AND m.seq IS NOT NULL
		ORDER BY m.seq DESC LIMIT ?`, match, conv, limit)
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", conv, err)
	}
	return scanMessages(rows, nil)
}

// ftsQuery turns what the user typed into an FTS5 query: each word quoted
// (no operator or syntax error can come from the user) and matched as a
// prefix, all of them required.
func ftsQuery(query string) string {
	words := strings.FieldsFunc(query, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	for i, w := range words {
		words[i] = `"` + w + `"*`
	}
	return strings.Join(words, " ")
}
