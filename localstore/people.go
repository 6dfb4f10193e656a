package localstore

import (
	"context"
	"database/sql"
	"fmt"

	json "github.com/go-json-experiment/json"

	"github.com/imcore/im/protocol"
)

// settingsKey is the meta row of the user's settings, as the server last
// gave them (JSON).
const settingsKey = "settings"

// Settings returns the user's settings as last stored; ok is false before
// the server first gave them.
func (s *Store) Settings() (settings protocol.UserSettings, ok bool, err error) {
	v, ok, err := s.meta(context.Background(), settingsKey)
	if err != nil || !ok {
		return protocol.DefaultSettings(), false, err
	}
	if err := json.Unmarshal([]byte(v), &settings); err != nil {
		return protocol.DefaultSettings(), false, fmt.Errorf("settings: %w", err)
	}
	if settings.Blocked == nil {
		settings.Blocked = []string{}
	}
	return settings, true, nil
}

// SetSettings keeps the user's settings.
func (s *Store) SetSettings(settings protocol.UserSettings) error {
	if settings.Blocked == nil {
		settings.Blocked = []string{}
	}
	v, err := json.Marshal(settings)
	if err != nil {
		return err
	}
	_, err = s.w.Exec(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
		settingsKey, string(v))
	if err != nil {
		return fmt.Errorf("set settings: %w", err)
	}
	return nil
}

// Names returns the display names kept for other users: user → name.
func (s *Store) Names() (map[string]string, error) {
	rows, err := s.r.Query(`SELECT user, name FROM people`)
	if err != nil {
		return nil, fmt.Errorf("names: %w", err)
	}
	defer rows.Close()
	out := make(map[string]string)
	for rows.Next() {
		var user, name string
		if err := rows.Scan(&user, &name); err != nil {
			return nil, fmt.Errorf("names: %w", err)
		}
		out[user] = name
	}
	return out, rows.Err()
}

// SetNames keeps the display names of users (user → name); an empty name
// forgets the user's.
func (s *Store) SetNames(names map[string]string) error {
	if len(names) == 0 {
		return nil
	}
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		for user, name := range names {
			var err error
			if name == "" {
				_, err = tx.Exec(`DELETE FROM people WHERE user = ?`, user)
			} else {
				_, err = tx.Exec(`INSERT INTO people (user, name) VALUES (?, ?)
					ON CONFLICT (user) DO UPDATE SET name = excluded.name`, user, name)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set names: %w", err)
	}
	return nil
}
