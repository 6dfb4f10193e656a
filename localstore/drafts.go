package localstore

import "fmt"

// SetDraft keeps text as what the user typed in conv and has not sent; an
// empty text forgets it.
func (s *Store) SetDraft(conv, text string) error {
	var err error
	if text == "" {
		_, err = s.w.Exec(`DELETE FROM drafts WHERE conv = ?`, conv)
	} else {
		_, err = s.w.Exec(`INSERT INTO drafts (conv, text, updated) VALUES (?, ?, ?)
			ON CONFLICT (conv) DO UPDATE SET text = excluded.text, updated = excluded.updated`,
			conv, text, s.now().UnixMilli())
	}
	if err != nil {
		return fmt.Errorf("draft of %s: %w", conv, err)
	}
	return nil
}

// Drafts returns every kept draft: conversation → text.
func (s *Store) Drafts() (map[string]string, error) {
	rows, err := s.r.Query(`SELECT conv, text FROM drafts`)
	if err != nil {
		return nil, fmt.Errorf("drafts: %w", err)
	}
	defer rows.Close()
	out := make(map[string]string)
	for rows.Next() {
		var conv, text string
		if err := rows.Scan(&conv, &text); err != nil {
			return nil, fmt.Errorf("drafts: %w", err)
		}
		out[conv] = text
	}
	return out, rows.Err()
}
