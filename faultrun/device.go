package faultrun

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/localstore"
)

// ackWindow is how many of a conversation's newest stored messages a
// device looks through for its own acknowledged messages after a change.
// A message acknowledged while further back is found by the final sweep.
const ackWindow = 100

// Device is one profile: a client with its own local store on
// disk, connected through the proxy, and the driver that uses it as a
// person would (see drive). The client can be restarted on the same
// store, as when the app is closed and opened again.
type Device struct {
	Name string // user-n
	User string
	path string // the store's file
	url  string
	led  *Ledger
	fail func(error) // reports a failure of the harness (a store it could not read)

	groups chan client.GroupChanged // the client's group answers
	convs  []string                 // the conversations it belongs to; set before driving

	// mu guards the client and its store: actions hold it shared, a
	// restart exclusively.
	mu      sync.RWMutex
	store   *localstore.Store
	eng     *client.Client
	cancel  context.CancelFunc
	runDone chan struct{}
	evDone  chan struct{}
}

// OpenDevice opens (creating) the profile database in dir and an client
// of user on url, and starts the client; fail receives the harness's own
// failures.
func OpenDevice(dir, user, name, url string, led *Ledger, fail func(error)) (*Device, error) {
	d := &Device{
		Name: name, User: user, path: filepath.Join(dir, name+".db"), url: url,
		led: led, fail: fail, groups: make(chan client.GroupChanged, 4),
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.open(); err != nil {
		return nil, err
	}
	return d, nil
}

// open opens the store and starts an client on it (d.mu held).
func (d *Device) open() error {
	st, err := localstore.Open(d.path)
	if err != nil {
		return err
	}
	eng, err := client.New(client.Config{
		URL: d.url, User: d.User, Store: st,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond,
	})
	if err != nil {
		st.Close()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.store, d.eng, d.cancel = st, eng, cancel
	d.runDone, d.evDone = make(chan struct{}), make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		if err := eng.Run(ctx); err != nil {
			d.led.noteRunError(d.Name, err)
		}
	}(d.runDone)
	go d.follow(eng, d.evDone)
	return nil
}

// shut stops the client and closes the store (d.mu held).
func (d *Device) shut() {
	if d.cancel == nil {
		return
	}
	d.cancel()
	<-d.runDone
	d.eng.Close()
	<-d.evDone
	d.store.Close()
	d.cancel = nil
}

// Close stops the client and closes the store.
func (d *Device) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.shut()
}

// Restart stops the client, closes the store, and opens both again.
func (d *Device) Restart() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.shut()
	if err := d.open(); err != nil {
		return fmt.Errorf("%s: reopen: %w", d.Name, err)
	}
	return nil
}

// use runs fn with the client and its store, which no restart replaces
// meanwhile.
func (d *Device) use(fn func(eng *client.Client, st *localstore.Store) error) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.cancel == nil {
		return fmt.Errorf("%s: closed", d.Name)
	}
	return fn(d.eng, d.store)
}

// follow reads eng's events until it is closed: connection states,
// acknowledgements of the device's own messages, errors, group answers.
func (d *Device) follow(eng *client.Client, done chan struct{}) {
	defer close(done)
	for ev := range eng.Events() {
		switch e := ev.(type) {
		case client.ConnChanged:
			d.led.noteConn(d.Name, e.Conn.State == client.Online)
		case client.MessagesChanged:
			if d.led.Unacked(d.Name, e.Conv) > 0 {
				if err := d.noteAcks(eng, e.Conv, ackWindow); err != nil {
					d.fail(fmt.Errorf("%s: %w", d.Name, err))
				}
			}
		case client.ErrorEvent:
			d.led.noteError(d.Name, e.Op, e.Err)
		case client.GroupChanged:
			select {
			case d.groups <- e:
			default:
			}
		}
	}
}

// noteAcks records the device's own messages among the newest limit
// stored in conv that have a seq: the client's acknowledgement.
func (d *Device) noteAcks(eng *client.Client, conv string, limit int) error {
	msgs, err := eng.Messages(conv, 0, limit)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Seq > 0 && m.From == d.User {
			d.led.Ack(d.Name, MsgKey{m.Conv, m.MsgID}, m.Seq)
		}
	}
	return nil
}
