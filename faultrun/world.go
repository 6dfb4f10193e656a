package faultrun

import (
	"fmt"
	"slices"

	"github.com/imcore/im/client"
	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
)

// World is everything the final checks look at, gathered once the run is
// quiet: the server's view (read by probes), every device's local store,
// and the ledger.
type World struct {
	// Members lists each conversation's members, sorted.
	Members map[string][]string
	// History is each conversation's whole history, as the server returns it.
	History map[string][]protocol.Message
	// Receipts are each conversation's member boundaries.
	Receipts map[string][]protocol.MemberReceipt
	// Sessions is each user's main list from a full sync, and TotalUnread
	// its total.
	Sessions    map[string][]protocol.Session
	TotalUnread map[string]int64
	// Unreadable lists what the server would not give.
	Unreadable []string
	Devices    []DeviceView
	Ledger     LedgerView
}

// DeviceView is what one device's local store holds.
type DeviceView struct {
	Name, User string
	// Messages is, per conversation the device belongs to, every message
	// the store shows: those with a seq in seq order, then outbox ones.
	Messages map[string][]localstore.Message
	// Sessions and Ticks are the stored sessions and tick boundaries of
	// those conversations (sessions not stored are absent).
	Sessions    map[string]protocol.Session
	Ticks       map[string]protocol.Ticks
	TotalUnread int64
	// Cursor is the main list's sync cursor.
	Cursor       int64
	Outbox       int
	PendingReads map[string]int64
}

// readServer reads the server's view of convs (members by conversation)
// for users, through probes connected straight to addr. What the server
// refuses to give is noted in Unreadable: a server that lost a group
// answers not_found, which Verify reports.
func readServer(addr string, members map[string][]string, users []string) *World {
	w := &World{
		Members: members, History: make(map[string][]protocol.Message), Receipts: make(map[string][]protocol.MemberReceipt),
		Sessions: make(map[string][]protocol.Session), TotalUnread: make(map[string]int64),
	}
	probes := make(map[string]*probe)
	defer func() {
		for _, p := range probes {
			p.close()
		}
	}()
	probeOf := func(user string) (*probe, error) {
		if p, ok := probes[user]; ok {
			return p, nil
		}
		p, err := dialProbe(addr, user)
		if err != nil {
			return nil, err
		}
		probes[user] = p
		return p, nil
	}
	unreadable := func(what string, err error) {
		w.Unreadable = append(w.Unreadable, fmt.Sprintf("%s: %v", what, err))
	}
	for _, conv := range sortedKeys(members) {
		p, err := probeOf(members[conv][0])
		if err != nil {
			unreadable("history of "+conv, err)
			continue
		}
		if w.History[conv], err = p.history(conv); err != nil {
			unreadable("history of "+conv, err)
		}
		if w.Receipts[conv], err = p.receipts(conv); err != nil {
			unreadable("receipts of "+conv, err)
		}
	}
	for _, user := range users {
		p, err := probeOf(user)
		if err == nil {
			w.Sessions[user], w.TotalUnread[user], err = p.sessions()
		}
		if err != nil {
			unreadable("sessions of "+user, err)
		}
	}
	return w
}

// readDevice reads what d's store holds of its conversations; newest
// bounds the messages read per conversation (the server's newest seq; the
// store is read a little beyond it).
func readDevice(d *Device, newest map[string]int64) (DeviceView, error) {
	v := DeviceView{
		Name: d.Name, User: d.User,
		Messages: make(map[string][]localstore.Message), Sessions: make(map[string]protocol.Session),
		Ticks: make(map[string]protocol.Ticks),
	}
	err := d.use(func(_ *client.Client, st *localstore.Store) error {
		for _, conv := range d.convs {
			msgs, err := st.Messages(conv, 0, int(newest[conv])+100)
			if err != nil {
				return err
			}
			v.Messages[conv] = msgs
			s, ok, err := st.Session(conv)
			if err != nil {
				return err
			}
			if ok {
				v.Sessions[conv] = s
			}
			if v.Ticks[conv], err = st.Ticks(conv); err != nil {
				return err
			}
		}
		var err error
		if v.TotalUnread, err = st.TotalUnread(""); err != nil {
			return err
		}
		if v.Cursor, err = st.Cursor(""); err != nil {
			return err
		}
		outbox, err := st.Outbox()
		if err != nil {
			return err
		}
		v.Outbox = len(outbox)
		v.PendingReads, err = st.PendingReads()
		return err
	})
	return v, err
}

// gather reads the whole world: the server's view, then every device's
// store. The devices' own acknowledged messages are swept into the ledger
// first (those acknowledged while beyond the ack window).
func gather(addr string, members map[string][]string, users []string, devices []*Device, led *Ledger) (*World, error) {
	w := readServer(addr, members, users)
	newest := make(map[string]int64)
	for conv, h := range w.History {
		if len(h) > 0 {
			newest[conv] = h[len(h)-1].Seq
		}
	}
	for _, d := range devices {
		v, err := readDevice(d, newest)
		if err != nil {
			return nil, fmt.Errorf("%s: read store: %w", d.Name, err)
		}
		for _, conv := range sortedKeys(v.Messages) {
			for _, m := range v.Messages[conv] {
				if m.Seq > 0 && m.From == d.User {
					led.Ack(d.Name, MsgKey{m.Conv, m.MsgID}, m.Seq)
				}
			}
		}
		w.Devices = append(w.Devices, v)
	}
	w.Ledger = led.View()
	return w, nil
}

// directMembers returns the two members of a direct conversation.
func directMembers(conv string) []string {
	c, ok := protocol.ParseConv(conv)
	if !ok || c.Kind != protocol.ConvDirect {
		return nil
	}
	m := []string{c.A, c.B}
	slices.Sort(m)
	return m
}
