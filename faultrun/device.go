package faultrun

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// Device is one profile: a client engine with its own local store on
// disk, connected through the proxy, and the driver that uses it as a
// person would (sending, reading, scrolling back, pinning and muting).
type Device struct {
	Name  string // user/n
	User  string
	path  string
	store *localstore.Store
	eng   *client.Client
	led   *Ledger

	cancel  context.CancelFunc
	runDone chan struct{}
	evDone  chan struct{}
	groups  chan client.GroupChanged

	convs []string // the conversations it belongs to; set before driving
}

// OpenDevice opens (creating) the profile database in dir and an engine
// of user on url.
func OpenDevice(dir, user, name, url string, led *Ledger) (*Device, error) {
	path := filepath.Join(dir, name+".db")
	st, err := localstore.Open(path)
	if err != nil {
		return nil, err
	}
	eng, err := client.New(client.Config{
		URL: url, User: user, Store: st,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	return &Device{Name: name, User: user, path: path, store: st, eng: eng, led: led, groups: make(chan client.GroupChanged, 4)}, nil
}

// Start runs the engine and follows its events until Close.
func (d *Device) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.runDone, d.evDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(d.runDone)
		if err := d.eng.Run(ctx); err != nil {
			d.led.noteRunError(d.Name, err)
		}
	}()
	go d.follow()
}

// Close stops the engine and closes the store.
func (d *Device) Close() {
	if d.cancel != nil {
		d.cancel()
		<-d.runDone
		d.eng.Close()
		<-d.evDone
		d.cancel = nil
	}
	d.store.Close()
}

// follow reads the engine's events: connection states, acknowledgements
// of the device's own messages, errors, group answers.
func (d *Device) follow() {
	defer close(d.evDone)
	for ev := range d.eng.Events() {
		switch e := ev.(type) {
		case client.ConnChanged:
			d.led.noteConn(d.Name, e.Conn.State == client.Online)
		case client.MessagesChanged:
			if d.led.Unacked(d.Name, e.Conv) > 0 {
				d.noteAcks(e.Conv, ackWindow)
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
// stored in conv that have a seq: the engine's acknowledgement.
func (d *Device) noteAcks(conv string, limit int) error {
	msgs, err := d.eng.Messages(conv, 0, limit)
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

// send hands a new message in conv to the engine.
func (d *Device) send(conv string) error {
	body := d.led.nextBody(d.Name)
	m, err := d.eng.Send(conv, body)
	if err != nil {
		return fmt.Errorf("%s: send in %s: %w", d.Name, conv, err)
	}
	d.led.Queue(Queued{Key: MsgKey{conv, m.MsgID}, User: d.User, Device: d.Name, Body: body})
	return nil
}

// read marks conv read up to the newest message the device holds.
func (d *Device) read(conv string) error {
	msgs, err := d.eng.Messages(conv, 0, 1)
	if err != nil {
		return err
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Seq > 0 {
			d.eng.MarkRead(conv, msgs[i].Seq)
			return nil
		}
	}
	return nil
}

// scrollBack does what a chat view does when scrolled to the oldest
// message it shows: if the device does not hold every message below its
// newest, it asks the server for the page below the lowest message of the
// newest contiguous run. It reports whether it asked.
func (d *Device) scrollBack(conv string) (bool, error) {
	synced, err := d.store.SyncedSeq(conv)
	if err != nil {
		return false, err
	}
	const page = 200
	msgs, err := d.store.Messages(conv, 0, page)
	if err != nil {
		return false, err
	}
	var held []localstore.Message
	for _, m := range msgs {
		if m.Seq > 0 {
			held = append(held, m)
		}
	}
	if len(held) == 0 || held[len(held)-1].Seq <= synced {
		return false, nil
	}
	// Walk down from the newest message to the bottom of its run.
	low := held[len(held)-1].Seq
	for {
		for i := len(held) - 1; i >= 0; i-- {
			if held[i].Seq < low-1 {
				d.eng.LoadOlder(conv, low)
				return true, nil
			}
			low = held[i].Seq
		}
		if low <= 1 {
			return false, nil
		}
		if len(held) < page {
			d.eng.LoadOlder(conv, low)
			return true, nil
		}
		msgs, err = d.store.Messages(conv, low, page)
		if err != nil {
			return false, err
		}
		held = msgs
	}
}

// sessionOps are the session operations a driver applies now and then;
// none of them moves a read boundary.
var sessionOps = []string{"pin", "unpin", "mute", "unmute", "mark_unread"}

// drive uses the device until ctx ends: every random interval around
// every it sends (unless maxPending of its messages already wait for their
// ack), reads, scrolls back or applies a session operation.
func (d *Device) drive(ctx context.Context, rng *rand.Rand, every time.Duration, maxPending int, fail func(error)) {
	for {
		wait := time.NewTimer(time.Duration(rng.Int64N(int64(2*every) + 1)))
		select {
		case <-ctx.Done():
			wait.Stop()
			return
		case <-wait.C:
		}
		conv := d.convs[rng.IntN(len(d.convs))]
		var err error
		switch r := rng.IntN(100); {
		case r < 60:
			if d.led.Unacked(d.Name, "") < maxPending {
				err = d.send(conv)
			}
		case r < 90:
			err = d.read(conv)
		case r < 95:
			_, err = d.scrollBack(conv)
		default:
			d.eng.SessionOp(conv, sessionOps[rng.IntN(len(sessionOps))], 0, "")
		}
		if err != nil {
			fail(err)
		}
	}
}

// driveAll drives every device, each with its own random source, until
// ctx ends, and returns once every driver has stopped.
func driveAll(ctx context.Context, devices []*Device, seed uint64, every time.Duration, maxPending int, fail func(error)) {
	var wg sync.WaitGroup
	for i, d := range devices {
		rng := rand.New(rand.NewPCG(seed, uint64(i)+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.drive(ctx, rng, every, maxPending, fail)
		}()
	}
	wg.Wait()
}
