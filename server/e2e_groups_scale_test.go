package server_test

import (
	"fmt"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// TestGroupOf500 is the scale promise of groups: in a group of 500 members,
// half of them online with two devices each and half offline, one message
// reaches every online device, every offline member holds a pending row,
// and the read receipts of all 500 produce one status per device per rise
// of the tick minimum, not one per receipt.
func TestGroupOf500(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 750 connections")
	}
	const members = 500
	env := servertest.Start(t)
	ctx := t.Context()
	users := make([]string, members)
	for i := range users {
		users[i] = fmt.Sprintf("u%03d", i)
	}
	online := func(i int) bool { return i%2 == 0 }

	// Every even member online on two devices; u000 creates and sends.
	devices := map[string][]*servertest.Client{}
	for i, u := range users {
		if online(i) {
			devices[u] = []*servertest.Client{env.Dial(t, u, "phone"), env.Dial(t, u, "laptop")}
		}
	}
	sender := devices[users[0]][0]
	g := sender.RequestOK(&protocol.CreateGroup{Title: "everyone", Members: users[1:]}).(*protocol.Group)
	if len(g.Members) != members {
		t.Fatalf("group has %d members, want %d", len(g.Members), members)
	}
	sent := sender.Send(g.Conv, "hello-all", "hello, all 500")

	// One message reaches every online device but the sending one.
	for u, ds := range devices {
		for _, d := range ds {
			if d == sender {
				continue
			}
			if m := d.ExpectMsg(g.Conv); m.Seq != 1 {
				t.Fatalf("%s/%s: first message seq %d, want the creation at 1", u, d.Device, m.Seq)
			}
			if m := d.ExpectMsg(g.Conv); m.Seq != sent.Seq || m.Body != "hello, all 500" {
				t.Fatalf("%s/%s got %+v, want the message at seq %d", u, d.Device, m, sent.Seq)
			}
		}
	}
	// Every offline member holds a pending row from the creation on.
	for i, u := range users {
		if online(i) {
			continue
		}
		rows, err := env.Server.Store().Pending(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Conv != g.Conv || rows[0].ReplayFrom() != 1 || rows[0].NewestSeq != sent.Seq {
			t.Fatalf("pending rows of offline %s = %+v, want one for %s from seq 1 to %d", u, rows, g.Conv, sent.Seq)
		}
	}

	// Every member reads: the online ones first, then the offline ones
	// come online (one device each), receive what is pending and read.
	read := func(c *servertest.Client) {
		c.RequestOK(&protocol.Read{Marks: []protocol.Mark{{Conv: g.Conv, Seq: sent.Seq}}})
	}
	for i, u := range users {
		if online(i) && i != 0 {
			read(devices[u][0])
		}
	}
	for i, u := range users {
		if online(i) {
			continue
		}
		d := env.Dial(t, u, "phone")
		for _, seq := range []int64{1, sent.Seq} {
			if m := d.ExpectMsg(g.Conv); m.Seq != seq {
				t.Fatalf("%s: replayed seq %d, want %d", u, m.Seq, seq)
			}
		}
		read(d)
		devices[u] = []*servertest.Client{d}
	}

	// The minimum rose once, when the last member read: every device
	// connected then got exactly one status, carrying both boundaries.
	want := protocol.Status{Conv: g.Conv, DeliveredSeq: sent.Seq, ReadSeq: sent.Seq}
	totalDevices, totalStatus := 0, 0
	for u, ds := range devices {
		for _, d := range ds {
			var got []protocol.Status
			for _, f := range d.Barrier() {
				if s, ok := f.(*protocol.Status); ok && s.Conv == g.Conv {
					got = append(got, *s)
				}
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("%s/%s got status pushes %+v, want exactly [%+v]", u, d.Device, got, want)
			}
			totalDevices++
			totalStatus += len(got)
		}
	}
	t.Logf("%d read receipts, %d devices, %d status pushes", members-1, totalDevices, totalStatus)
	receipts := sender.RequestOK(&protocol.ReceiptsRequest{Conv: g.Conv}).(*protocol.ReceiptsReply)
	if len(receipts.Members) != members {
		t.Fatalf("receipts list %d members, want %d", len(receipts.Members), members)
	}
	for _, r := range receipts.Members {
		if r.DeliveredSeq != sent.Seq || r.ReadSeq != sent.Seq {
			t.Errorf("receipt of %s = %+v, want both at %d", r.User, r, sent.Seq)
		}
	}
}
