package client

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
)

// TestDeletingALeftGroupHidesItLocally checks that deleting a group the
// user has left (the server refuses every frame about it) hides it from
// this device's list without asking the server, and that a later change
// from the server (being added back) shows it again.
func TestDeletingALeftGroupHidesItLocally(t *testing.T) {
	st, err := localstore.Open(filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const left, kept = "g:left", "g:kept"
	err = st.PutSessions([]protocol.Session{
		{Conv: left, Kind: "group", Title: "old team", Members: []string{}, WriteSeq: 3, ReadSeq: 3, ActiveTS: 10, WriteTS: 10},
		{Conv: kept, Kind: "group", Title: "team", Members: []string{"alice", "bob"}, WriteSeq: 1, ActiveTS: 11, WriteTS: 11},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{URL: "ws://127.0.0.1:1/ws", User: "alice", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	c.SessionOp(left, "delete", 0, "")
	if got := convsOf(t, c); !slices.Equal(got, []string{kept}) {
		t.Fatalf("list after deleting the left group = %v, want [%s]", got, kept)
	}
	// The member group's delete shows at once too, and waits for the
	// server; the left group's is this device's alone.
	c.SessionOp(kept, "delete", 0, "")
	if got := convsOf(t, c); len(got) != 0 {
		t.Fatalf("list after deleting both = %v, want none", got)
	}
	ops, err := st.PendingOps()
	if err != nil || len(ops) != 1 || ops[0].Conv != kept || ops[0].Op != "delete" {
		t.Errorf("operations kept for the server = %+v, %v; want the member group's delete only", ops, err)
	}
	// Added back: the server's newer session replaces the local hiding.
	err = st.PutSessions([]protocol.Session{{Conv: left, Kind: "group", Title: "old team", Members: []string{"alice", "bob"},
		WriteSeq: 5, ReadSeq: 4, UnreadCount: 1, ActiveTS: 20, WriteTS: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if got := convsOf(t, c); !slices.Contains(got, left) {
		t.Errorf("list after being added back = %v, want %s shown again", got, left)
	}
}

func convsOf(t *testing.T, c *Client) []string {
	t.Helper()
	sessions, _, err := c.Sessions("")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range sessions {
		out = append(out, s.Conv)
	}
	return out
}
