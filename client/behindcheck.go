package client

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
)

// behindCheck compares, on one connection, what the server says of each
// conversation with what the device held when the connection began, so
// that a server that lost its data is noticed on (re)connecting, before
// anyone sends: a session whose write_seq is below the newest seq the
// device holds from the server and whose history lacks that message, or
// (when the server's whole list came in one page) a conversation the
// device holds messages of that the server does not list at all. The
// messages the device held before the connection were all stored by the
// server before this connection's requests, so the comparison is free of
// races with pushes. It only warns: what the device holds is not touched.
type behindCheck struct {
	held     map[string]localstore.Held // what the device held; nil: nothing to compare
	found    map[string]bool            // conversations the server is behind in
	asking   map[string]bool            // conversations whose history is asked to confirm it
	collided []localstore.Behind        // seqs that collided before the check settled, said with it
	lagging  map[string]bool            // sessions below the device whose history holds what it holds
	told     map[string]bool            // conversations said behind on this connection (here or by reportBehind)
	probed   bool                       // the probe of the whole list was answered
	said     bool                       // the warning was given on this connection
	done     bool                       // the check ended (counted for tests)
}

// probeLimit is the size of the page of the server's whole list asked for
// on each connection: enough to see that a server holds nothing of the
// user (or one session only), small enough to cost nothing.
const probeLimit = 1

// startBehindCheck takes what the device holds, before any request of the
// connection, and asks the server for the first page of the user's whole
// list (since 0): the answer is compared in onProbe.
func (l *link) startBehindCheck() {
	l.behind = behindCheck{found: make(map[string]bool), told: make(map[string]bool),
		asking: make(map[string]bool), lagging: make(map[string]bool)}
	held, err := l.c.store.HeldConvs()
	if err != nil {
		l.c.log.Error("read held conversations", "err", err)
	}
	if len(held) == 0 {
		l.behind.probed = true // a new device: the server cannot be behind it
		return
	}
	l.behind.held = held
	l.request(&request{
		op:     "sync",
		frame:  &protocol.Sync{Since: 0, Limit: probeLimit},
		answer: func(l *link, f protocol.Frame) { l.onProbe(f) },
	})
}

// onProbe compares the first page of the server's whole list: its
// sessions, and, when it is the whole list, the conversations it lacks.
func (l *link) onProbe(f protocol.Frame) {
	l.behind.probed = true
	defer l.behindSettled()
	page, ok := f.(*protocol.Sessions)
	if !ok {
		l.c.log.Warn("history check refused", "err", answerError(f))
		return
	}
	l.compareSessions(page.Sessions)
	if page.HasMore {
		return
	}
	listed := make(map[string]bool, len(page.Sessions))
	gateways := false
	for _, s := range page.Sessions {
		listed[s.Conv] = true
		_, isGateway := protocol.IsGateway(s.Conv)
		gateways = gateways || isGateway
	}
	for conv, h := range l.behind.held {
		if h.SubBiz != "" {
			if !listed[protocol.GatewayConv(h.SubBiz)] {
				l.behind.found[conv] = true
			}
			continue
		}
		// A listed gateway may hold the conversation now (a session
		// can move to a nested list): only a list without any says.
		if !listed[conv] && !gateways {
			l.behind.found[conv] = true
		}
	}
}

// compareSessions asks the history of each session whose newest seq is
// below the newest the device held from the server (confirmBehind). A
// group the user left shows what it showed when the user left, and the
// device may hold a little more (the notice it writes itself, pushes that
// crossed the leaving): it is not compared.
func (l *link) compareSessions(sessions []protocol.Session) {
	ck := &l.behind
	for _, s := range sessions {
		h, ok := ck.held[s.Conv]
		if !ok || s.Kind == "group" && !slices.Contains(s.Members, l.self) {
			continue
		}
		if s.WriteSeq < h.Newest && !ck.found[s.Conv] && !ck.told[s.Conv] && !ck.asking[s.Conv] && !ck.lagging[s.Conv] {
			l.confirmBehind(s.Conv, h)
		}
	}
}

// confirmBehind asks the server for the message at the newest seq the
// device holds of conv: a session is derived from the history and may lag
// it for a moment (its state is written behind the message), so only a
// history without that message, or with another message there, says the
// server is behind. An answer that is no answer (refused for a passing
// reason) says nothing.
func (l *link) confirmBehind(conv string, h localstore.Held) {
	ck := &l.behind
	ck.asking[conv] = true
	after := h.Newest - 1
	l.request(&request{
		op:    "history",
		frame: &protocol.History{Conv: conv, AfterSeq: &after, Limit: 1},
		answer: func(l *link, f protocol.Frame) {
			delete(ck.asking, conv)
			defer l.behindSettled()
			page, ok := f.(*protocol.Messages)
			switch {
			case ok && len(page.Messages) > 0 && page.Messages[0].Seq == h.Newest && page.Messages[0].MsgID == h.MsgID:
				l.c.log.Info("session behind its history", "conv", conv, "held", h.Newest)
				ck.lagging[conv] = true
			case temporary(f):
				l.c.log.Warn("history check refused for now", "conv", conv, "err", answerError(f))
			default:
				ck.found[conv] = true
			}
		},
	})
}

// behindSettled says, once per connection, that the server is behind in
// the conversations found (but those a collision already said), once the
// probe, the syncs in flight and the histories asked were answered, and
// counts the check done then. Conversations found after the warning are
// only logged.
func (l *link) behindSettled() {
	ck := &l.behind
	if !ck.probed || len(ck.asking) > 0 || len(l.syncing) > 0 || len(l.resync) > 0 {
		return
	}
	var convs []string
	for conv := range ck.found {
		if !ck.told[conv] {
			convs = append(convs, conv)
		}
	}
	if len(convs) > 0 {
		slices.Sort(convs)
		for _, conv := range convs {
			ck.told[conv] = true
		}
		l.c.log.Warn("server behind", "convs", convs)
		if !ck.said {
			ck.said = true
			l.c.behindSaid.Add(1)
			l.c.events.push(ErrorEvent{Op: "sync", Err: behindError(convs)})
		}
	}
	ck.collided = nil
	if !ck.done {
		ck.done = true
		l.c.behindChecks.Add(1)
	}
}

// endBehindCheck says, when the connection ends before its check settled,
// the collisions held back for the check's warning: the store moved the
// messages aside, and the next connection would not find it again.
func (l *link) endBehindCheck() {
	for _, b := range l.behind.collided {
		if !l.behind.told[b.Conv] {
			l.sayCollision(b)
		}
	}
	l.behind.collided = nil
}

// behindError says that the server holds less than the device of convs.
func behindError(convs []string) error {
	const named = 3
	which := strings.Join(convs[:min(len(convs), named)], ", ")
	if len(convs) > named {
		which += ", …"
	}
	count := fmt.Sprintf("%d conversations", len(convs))
	if len(convs) == 1 {
		count = "1 conversation"
	}
	return fmt.Errorf("%w in %s (%s): it holds less than this device (it lost messages?); the device keeps what it holds", ErrServerBehind, count, which)
}
