package memstore

import (
	"context"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// Person implements store.Backend.
func (s *Backend) Person(_ context.Context, user string) (store.Person, error) {
	d, err := s.lock()
	if err != nil {
		return store.Person{}, err
	}
	defer d.mu.Unlock()
	p, ok := d.people[user]
	if !ok || p.Settings.LastSeen == "" {
		p.Settings = protocol.DefaultSettings()
	}
	p.Settings.Blocked = slices.Clone(p.Settings.Blocked)
	return p, nil
}

// PutSettings implements store.Backend.
func (s *Backend) PutSettings(_ context.Context, user string, set protocol.UserSettings) error {
	d, err := s.lock()
	if err != nil {
		return err
	}
	defer d.mu.Unlock()
	p := d.people[user]
	p.Settings = set
	p.Settings.Blocked = slices.Clone(set.Blocked)
	d.people[user] = p
	return nil
}

// PutLastSeen implements store.Backend.
func (s *Backend) PutLastSeen(_ context.Context, user string, at int64) error {
	d, err := s.lock()
	if err != nil {
		return err
	}
	defer d.mu.Unlock()
	p := d.people[user]
	p.LastSeen = at
	d.people[user] = p
	return nil
}
