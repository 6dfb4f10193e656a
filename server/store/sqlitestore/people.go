package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// Person implements store.Backend.
func (s *Backend) Person(ctx context.Context, user string) (store.Person, error) {
	if err := s.checkOpen(); err != nil {
		return store.Person{}, err
	}
	p := store.Person{Settings: protocol.DefaultSettings()}
	var receipts int64
	var blocked string
	err := mustStmt(s.readStmts, qPersonGet).QueryRowContext(ctx, user).
		Scan(&p.Settings.LastSeen, &receipts, &p.Settings.Name, &blocked, &p.LastSeen)
	if errors.Is(err, sql.ErrNoRows) {
		return p, nil
	}
	if err != nil {
		return store.Person{}, fmt.Errorf("settings of %s: %w", user, err)
	}
	p.Settings.ReadReceipts = receipts != 0
	if err := json.Unmarshal([]byte(blocked), &p.Settings.Blocked); err != nil || p.Settings.Blocked == nil {
		p.Settings.Blocked = []string{}
	}
	return p, nil
}

// PutSettings implements store.Backend.
func (s *Backend) PutSettings(ctx context.Context, user string, set protocol.UserSettings) error {
	blocked, err := json.Marshal(append([]string{}, set.Blocked...))
	if err != nil {
		return err
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := s.execTx(ctx, tx, qSettingsPut, user, set.LastSeen, boolInt(set.ReadReceipts), set.Name, string(blocked))
		return err
	})
	if err != nil {
		return fmt.Errorf("put the settings of %s: %w", user, err)
	}
	return nil
}

// PutLastSeen implements store.Backend.
func (s *Backend) PutLastSeen(ctx context.Context, user string, at int64) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := s.execTx(ctx, tx, qLastSeenPut, user, at)
		return err
	})
	if err != nil {
		return fmt.Errorf("put the last seen of %s: %w", user, err)
	}
	return nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
