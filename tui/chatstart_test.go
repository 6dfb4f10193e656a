package tui

import (
	"testing"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui/tuitest"
)

// TestHistoryStartShowsTheStart checks that the client's word that the
// user may read nothing older (a member added later) ends the wait for
// older messages and shows the start of the conversation there, also when
// the chat opens again.
func TestHistoryStartShowsTheStart(t *testing.T) {
	const g = "g:team"
	f := tuitest.NewFake("erin", "phone", "localhost:8080")
	f.SetSessions("", []protocol.Session{{Conv: g, Kind: "group", Title: "team", Members: []string{"alice", "erin"},
		ReadSeq: 11, WriteSeq: 11, WriteTS: ms(0), LastMsg: last(g, 11, "alice", "welcome erin", ms(0))}})
	added := msg(g, 10, "alice", "alice added erin", ms(-time.Minute))
	added.Kind = protocol.KindSystem
	f.AddMessages(g, added, msg(g, 11, "alice", "welcome erin", ms(0)))
	h := newHarness(t, f, 80, 24)
	h.press("enter")
	if c := f.CallsOf("LoadOlder"); len(c) != 1 || c[0].Seq != 10 {
		t.Fatalf("LoadOlder calls %v, want one below 10", c)
	}
	h.contains("loading older messages…")
	h.event(client.HistoryStart{Conv: g, Seq: 10})
	h.contains("start of the conversation", "welcome erin")
	h.lacks("loading")
	// Opened again, the chat knows where it starts: no new request.
	h.press("esc", "enter")
	h.contains("start of the conversation")
	if c := f.CallsOf("LoadOlder"); len(c) != 1 {
		t.Fatalf("LoadOlder calls after reopening %v, want none more", c)
	}
}
