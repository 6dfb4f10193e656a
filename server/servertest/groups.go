package servertest

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
)

// groupConvRe is the shape of a group id the server chooses: g: and 26
// characters.
var groupConvRe = regexp.MustCompile(`^g:[a-z0-9]{26}$`)

// CreateGroup sends a create_group and requires a group answer whose conv
// has the shape of a group id.
func (c *Client) CreateGroup(f protocol.CreateGroup) *protocol.Group {
	c.T.Helper()
	answer := c.RequestOK(&f)
	g, ok := answer.(*protocol.Group)
	if !ok {
		c.T.Fatalf("%s/%s create_group: want group, got %s", c.User, c.Device, Describe(answer))
	}
	if !groupConvRe.MatchString(g.Conv) {
		c.T.Fatalf("create_group: conv %q is not g:<26 characters>", g.Conv)
	}
	return g
}

// GroupOp sends a group_op and requires a group answer.
func (c *Client) GroupOp(f protocol.GroupOp) *protocol.Group {
	c.T.Helper()
	answer := c.RequestOK(&f)
	g, ok := answer.(*protocol.Group)
	if !ok {
		c.T.Fatalf("%s/%s group_op %s: want group, got %s", c.User, c.Device, f.Op, Describe(answer))
	}
	return g
}

// WantGroup checks a group frame: conv, title and the sorted members.
func WantGroup(t testing.TB, g *protocol.Group, conv, title string, members ...string) {
	t.Helper()
	if members == nil {
		members = []string{}
	}
	if g.Conv != conv || g.Title != title || g.Members == nil || !slices.Equal(g.Members, members) {
		t.Fatalf("group %s, want conv %s title %q members %v", JSON(g), conv, title, members)
	}
}

// WantStoredGroup requires the store's state of group conv: its title and
// sorted members.
func (e *Env) WantStoredGroup(conv, title string, members ...string) {
	e.T.Helper()
	g, err := e.Server.Store().Group(context.Background(), conv)
	if err != nil {
		e.T.Fatalf("store group %s: %v", conv, err)
	}
	if members == nil {
		members = []string{}
	}
	if g.Title != title || !slices.Equal(g.Members, members) {
		e.T.Fatalf("store group %s: title %q members %v, want title %q members %v", conv, g.Title, g.Members, title, members)
	}
}

// GroupSession is the session object of a group as a member sees it,
// timestamps left out.
func GroupSession(conv, title string, members []string, unread, readSeq, writeSeq int64, last protocol.Message, ticks protocol.Ticks) protocol.Session {
	if members == nil {
		members = []string{}
	}
	return protocol.Session{Conv: conv, Kind: "group", Title: title, Members: members,
		UnreadCount: unread, ReadSeq: readSeq, WriteSeq: writeSeq, LastMsg: &last, Ticks: ticks}
}

// WantLockedOut requires every frame about group conv from c, a user who is
// not a member (any more), to be refused forbidden, and to change nothing:
// a delivered or read frame whose other mark is in direct, a conversation
// c may mark, is refused as a whole.
func (c *Client) WantLockedOut(conv, direct string) {
	c.T.Helper()
	forbidden := []protocol.Frame{
		&protocol.Send{Conv: conv, MsgID: "locked-out-" + c.Env.ID(), Body: "let me in", ClientTS: 1},
		&protocol.History{Conv: conv},
		&protocol.History{Conv: conv, AfterSeq: new(int64)},
		&protocol.History{Conv: conv, BeforeSeq: 2},
		&protocol.ReceiptsRequest{Conv: conv},
		Delivered(Mark(conv, 1)),
		Delivered(Mark(conv, 1000)),
		Read(Mark(conv, 1)),
		Read(Mark(conv, 0)),
		Delivered(Mark(direct, 1), Mark(conv, 1)),
		Delivered(Mark(conv, 1), Mark(direct, 1)),
		Read(Mark(direct, 1), Mark(conv, 1)),
		&protocol.SessionOp{Conv: conv, Op: "pin"},
		&protocol.SessionOp{Conv: conv, Op: "delete"},
		&protocol.SessionOp{Conv: conv, Op: "mute"},
		&protocol.SessionOp{Conv: conv, Op: "mark_unread"},
		&protocol.GroupOp{Conv: conv, Op: protocol.GroupAdd, Users: []string{"zoe"}},
		&protocol.GroupOp{Conv: conv, Op: protocol.GroupAdd, Users: []string{c.User}},
		&protocol.GroupOp{Conv: conv, Op: protocol.GroupRemove, Users: []string{"alice"}},
		&protocol.GroupOp{Conv: conv, Op: protocol.GroupRename, Title: "mine now"},
		&protocol.GroupOp{Conv: conv, Op: protocol.GroupLeave},
	}
	for _, f := range forbidden {
		c.RequestError(f, protocol.CodeForbidden)
	}
	c.Write(&protocol.Typing{Conv: conv})
	e, ok := c.ExpectType("error").(*protocol.ErrorFrame)
	if !ok || e.Code != protocol.CodeForbidden || e.ID != "" {
		c.T.Fatalf("%s/%s typing in %s: got %s, want error forbidden without id", c.User, c.Device, conv, JSON(e))
	}
}
