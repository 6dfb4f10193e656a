package tuitest_test

import (
	"testing"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui"
	"github.com/imcore/im/tui/tuitest"
)

var _ tui.Backend = (*tuitest.Fake)(nil)

func m(seq int64) client.Message {
	return client.Message{Message: protocol.Message{Conv: "d:a:b", Seq: seq, MsgID: string(rune('a' + seq))}}
}

func TestFakeMessagesPages(t *testing.T) {
	f := tuitest.NewFake("a", "dev", "srv")
	f.AddMessages("d:a:b", m(3), m(1), m(2), m(5), m(4))
	sent, _ := f.Send("d:a:b", "hi")
	if !sent.Outbox || sent.Seq != 0 || sent.From != "a" {
		t.Fatalf("sent = %+v", sent)
	}
	seqs := func(ms []client.Message) (out []int64) {
		for _, x := range ms {
			out = append(out, x.Seq)
		}
		return out
	}
	newest, _ := f.Messages("d:a:b", 0, 2)
	if got := seqs(newest); len(got) != 3 || got[0] != 4 || got[1] != 5 || got[2] != 0 {
		t.Fatalf("newest page = %v, want [4 5 0] (outbox last)", got)
	}
	older, _ := f.Messages("d:a:b", 4, 2)
	if got := seqs(older); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("older page = %v, want [2 3]", got)
	}
	none, _ := f.Messages("d:a:b", 1, 50)
	if len(none) != 0 {
		t.Fatalf("below seq 1: %v", none)
	}
	f.Store("d:a:b", sent.MsgID, 6)
	newest, _ = f.Messages("d:a:b", 0, 1)
	if got := seqs(newest); len(got) != 1 || got[0] != 6 {
		t.Fatalf("after store = %v, want [6]", got)
	}
}

func TestFakeSortsSessions(t *testing.T) {
	got := tuitest.SortSessions([]protocol.Session{
		{Conv: "c", WriteTS: 5}, {Conv: "b", WriteTS: 5}, {Conv: "a", WriteTS: 1, Priority: 1},
		{Conv: "d", WriteTS: 9}, {Conv: "x", WriteTS: 99, Deleted: true},
	})
	var order string
	for _, s := range got {
		order += s.Conv
	}
	if order != "adbc" {
		t.Fatalf("order %q, want adbc", order)
	}
}

func TestFakeRecordsGroupOp(t *testing.T) {
	f := tuitest.NewFake("a", "dev", "srv")
	f.GroupOp("g:x", "add", []string{"b", "c"}, "")
	f.GroupOp("g:x", "rename", nil, "new name")
	c := f.CallsOf("GroupOp")
	if len(c) != 2 || c[0].Conv != "g:x" || c[0].Op != "add" || len(c[0].Members) != 2 || c[1].Title != "new name" {
		t.Fatalf("GroupOp calls = %v", c)
	}
	if s := c[0].String(); s != `GroupOp(g:x, add, [b c], "")` {
		t.Fatalf("String() = %s", s)
	}
}
