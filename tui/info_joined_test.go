package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// TestMessageInfoLeavesLaterMembersOut checks that message info counts
// only the members who were in the group when the message was written: a
// member added later neither received nor read it, though the server
// starts its boundaries at the seq before it joined.
func TestMessageInfoLeavesLaterMembersOut(t *testing.T) {
	f := newFixture()
	team := "g:team"
	added := msg(team, 10, "alice", "alice added erin and frank", ms(-30*time.Minute))
	added.Kind = protocol.KindSystem
	f.AddMessages(team, msg(team, 9, "alice", "m1", ms(-time.Hour)), added)
	f.SetReceipts(team, []protocol.MemberReceipt{
		{User: "alice", DeliveredSeq: 10, ReadSeq: 10},
		{User: "bob", DeliveredSeq: 9, ReadSeq: 9},
		{User: "erin", DeliveredSeq: 9, ReadSeq: 9},  // joined at 10: never connected
		{User: "frank", DeliveredSeq: 9, ReadSeq: 9}, // the same
	})
	h := newHarness(t, f, 100, 40)
	h.press("enter") // team
	h.press("ctrl+o")
	h.contains("Message info", "“m1”", "Read by 1 of 1", "bob")
	h.lacks("Read by 3 of 3")
	if info := h.m.dialog.View(); strings.Contains(info, "erin") || strings.Contains(info, "frank") {
		t.Errorf("message info names the members added after it:\n%s", info)
	}
}

// TestJoinedAfter checks which members a system message names as added.
func TestJoinedAfter(t *testing.T) {
	sys := func(body string) client.Message {
		return client.Message{Message: protocol.Message{Kind: protocol.KindSystem, Body: body}}
	}
	got := addedUsers([]client.Message{
		sys("alice added bob"), sys("carol added dave and erin"), sys("carol added f, g and h"),
		{Message: protocol.Message{Body: "zed added yann"}}, // an ordinary message says nothing
		sys("alice renamed the group to \"x added y\""),
		sys("alice added a, b, … and 40 others"),
	})
	for _, u := range []string{"bob", "dave", "erin", "f", "g", "h", "a", "b"} {
		if !got[u] {
			t.Errorf("%s not found added in %v", u, got)
		}
	}
	for _, u := range []string{"yann", "y", "x", "40 others", "…"} {
		if got[u] {
			t.Errorf("%s found added in %v", u, got)
		}
	}
}
