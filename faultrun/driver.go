package faultrun

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/localstore"
)

// send hands a new message in conv to the engine.
func (d *Device) send(eng *client.Client, conv string) error {
	body := d.led.nextBody(d.Name)
	m, err := eng.Send(conv, body)
	if err != nil {
		return fmt.Errorf("%s: send in %s: %w", d.Name, conv, err)
	}
	d.led.Queue(Queued{Key: MsgKey{conv, m.MsgID}, User: d.User, Device: d.Name, Body: body})
	return nil
}

// read marks conv read up to the newest message the device holds.
func (d *Device) read(eng *client.Client, conv string) error {
	msgs, err := eng.Messages(conv, 0, 1)
	if err != nil {
		return err
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Seq > 0 {
			eng.MarkRead(conv, msgs[i].Seq)
			return nil
		}
	}
	return nil
}

// scrollBack does what a chat view does when scrolled to the oldest
// message it shows: if the store does not hold every message of conv
// below its newest, it has the client ask the server for the page below
// the lowest message of the newest contiguous run. It reports whether it
// asked.
func scrollBack(eng *client.Client, st *localstore.Store, conv string) (bool, error) {
	synced, err := st.SyncedSeq(conv)
	if err != nil {
		return false, err
	}
	const page = 200
	msgs, err := st.Messages(conv, 0, page)
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
				eng.LoadOlder(conv, low)
				return true, nil
			}
			low = held[i].Seq
		}
		if low <= 1 {
			return false, nil
		}
		if len(held) < page {
			eng.LoadOlder(conv, low)
			return true, nil
		}
		msgs, err = st.Messages(conv, low, page)
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
func (d *Device) drive(ctx context.Context, rng *rand.Rand, every time.Duration, maxPending int) {
	for {
		wait := time.NewTimer(time.Duration(rng.Int64N(int64(2*every) + 1)))
		select {
		case <-ctx.Done():
			wait.Stop()
			return
		case <-wait.C:
		}
		conv := d.convs[rng.IntN(len(d.convs))]
		action, op := rng.IntN(100), sessionOps[rng.IntN(len(sessionOps))]
		err := d.use(func(eng *client.Client, st *localstore.Store) error {
			switch {
			case action < 60:
				if d.led.Unacked(d.Name, "") < maxPending {
					return d.send(eng, conv)
				}
			case action < 90:
				return d.read(eng, conv)
			case action < 95:
				_, err := scrollBack(eng, st, conv)
				return err
			default:
				eng.SessionOp(conv, op, 0, "")
			}
			return nil
		})
		if err != nil {
			d.fail(err)
		}
	}
}

// driveAll drives every device, each with its own random source, until
// ctx ends, and returns once every driver has stopped.
func driveAll(ctx context.Context, devices []*Device, seed uint64, every time.Duration, maxPending int) {
	var wg sync.WaitGroup
	for i, d := range devices {
		rng := rand.New(rand.NewPCG(seed, uint64(i)+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.drive(ctx, rng, every, maxPending)
		}()
	}
	wg.Wait()
}
