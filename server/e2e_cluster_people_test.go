package server_test

import (
	"reflect"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// TestClusterPeopleAcrossNodes: settings, a block and presence made
// through node A are in force for a user on node B once answered.
func TestClusterPeopleAcrossNodes(t *testing.T) {
	nodes := servertest.Cluster(t, 2)
	a, b := nodes[0], nodes[1]
	alice := a.DialReplayed(t, "alice", "phone")
	aliceB := b.DialReplayed(t, "alice", "laptop")
	mallory := b.DialReplayed(t, "mallory", "phone")
	const dm = "d:alice:mallory"
	mallory.Send(dm, "m1", "hello")

	// Settings through A: pushed to her device on B, read there the same.
	want := settingsOf(alice, map[string]any{"name": "Alice", "read_receipts": false})
	if pushed := aliceB.Expect("settings pushed to node B", servertest.OfType("settings")).(*protocol.SettingsReply); !reflect.DeepEqual(pushed.Settings, want) {
		t.Errorf("pushed on node B: %+v, want %+v", pushed.Settings, want)
	}
	if got := settingsOf(aliceB, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("read through node B: %+v, want %+v", got, want)
	}

	// Read receipts off, set through A, hide mallory's read on B.
	alice.Send(dm, "a1", "hi")
	mallory.ExpectMsg(dm)
	mallory.RequestOK(&protocol.Read{Marks: []protocol.Mark{{Conv: dm, Seq: 2}}})
	st := alice.Expect("mallory's delivered", func(f protocol.Frame) bool {
		st, ok := f.(*protocol.Status)
		return ok && st.Conv == dm && st.DeliveredSeq == 2
	}).(*protocol.Status)
	if st.ReadSeq >= 2 {
		t.Errorf("mallory's read shown to alice while her receipts are off: %+v", st)
	}

	// A block through A, in force for mallory's sends through B.
	alice.RequestOK(&protocol.Block{User: "mallory"})
	mallory.RequestError(&protocol.Send{Conv: dm, MsgID: "m2", Body: "let me in"}, protocol.CodeForbidden)
	aliceB.RequestOK(&protocol.Unblock{User: "mallory"})
	mallory.Send(dm, "m3", "thanks")

	// Presence: a watcher on A sees mallory, on B, come and go.
	wantPresence(t, "mallory online on B", presenceOf(alice, "mallory"), protocol.Presence{User: "mallory", Online: true})
	mallory.Close()
	gone := alice.Expect("mallory went away", servertest.OfType("presence")).(*protocol.PresenceReply)
	if len(gone.Users) != 1 || gone.Users[0].Online || gone.Users[0].LastSeen == 0 {
		t.Fatalf("pushed %+v, want mallory offline with her last seen", gone.Users)
	}
	b.DialReplayed(t, "mallory", "tablet")
	back := alice.Expect("mallory back", servertest.OfType("presence")).(*protocol.PresenceReply)
	if len(back.Users) != 1 || !back.Users[0].Online {
		t.Fatalf("pushed %+v, want mallory online", back.Users)
	}
}
