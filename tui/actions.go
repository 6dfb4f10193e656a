package tui

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// Mute durations offered by the mute dialog; 0 is "until unmuted".
var muteChoices = []struct {
	label string
	d     time.Duration
}{
	{"8 hours", 8 * time.Hour},
	{"1 week", 7 * 24 * time.Hour},
	{"Always", 0},
}

// sessionAction runs pin, mute, mark unread, delete or category on the
// selected session.
func (m *Model) sessionAction(msg tea.KeyPressMsg) tea.Cmd {
	r, ok := m.list.selected()
	if !ok {
		return nil
	}
	if r.kind == rowFolder {
		return m.notify("open the folder and pick a chat", false)
	}
	s := *r.sess
	b, conv, title := m.b, s.Conv, oneLine(s.Title)
	op := func(op string, until int64, category string) tea.Cmd {
		return call(func() { b.SessionOp(conv, op, until, category) })
	}
	k := m.keys.List
	switch {
	case key.Matches(msg, k.Pin):
		if s.Priority > 0 {
			return tea.Batch(op("unpin", 0, ""), m.notify("unpinned "+title, false))
		}
		return tea.Batch(op("pin", 0, ""), m.notify("pinned "+title, false))
	case key.Matches(msg, k.Mute):
		if s.Muted {
			return tea.Batch(op("unmute", 0, ""), m.notify("unmuted "+title, false))
		}
		labels := make([]string, len(muteChoices))
		for i, c := range muteChoices {
			labels[i] = c.label
		}
		m.dialog = &choiceDialog{title: "Mute " + title + " for", options: labels, choose: func(m *Model, i int) tea.Cmd {
			var until int64
			if d := muteChoices[i].d; d > 0 {
				until = m.opts.Now().Add(d).UnixMilli()
			}
			return tea.Batch(op("mute", until, ""), m.notify("muted "+title+": "+strings.ToLower(muteChoices[i].label), false))
		}}
	case key.Matches(msg, k.MarkUnread):
		if s.UnreadCount > 0 || s.MarkedUnread {
			seq := s.WriteSeq
			return tea.Batch(call(func() { b.MarkRead(conv, seq) }), m.notify("marked "+title+" read", false))
		}
		return tea.Batch(op("mark_unread", 0, ""), m.notify("marked "+title+" unread", false))
	case key.Matches(msg, k.Category):
		m.dialog = newPrompt("Move "+title+" to a category", "An empty name takes it out of its folder.",
			[]string{"Category"}, []string{s.Category}, func(m *Model, v []string) (tea.Cmd, error) {
				cat := v[0]
				if len(cat) > 64 {
					return nil, errors.New("at most 64 characters")
				}
				note := "moved " + title + " to " + cat
				if cat == "" {
					note = "took " + title + " out of " + s.Category
				}
				return tea.Batch(op("set_category", 0, cat), m.notify(note, false)), nil
			})
	case key.Matches(msg, k.Delete):
		m.dialog = &confirmDialog{title: "Delete chat", text: "Delete " + title + "? Its messages stay on the server; a new message brings it back.",
			yes: func(m *Model) tea.Cmd {
				if m.chat != nil && m.chat.conv == conv {
					m.closeChat()
				}
				return tea.Batch(op("delete", 0, ""), m.notify("deleted "+title, false))
			}}
	}
	return nil
}

// newChatDialog asks for a user id and opens the direct chat.
func (m *Model) newChatDialog() dialog {
	return newPrompt("New chat", "The chat starts with your first message.", []string{"User id"}, nil,
		func(m *Model, v []string) (tea.Cmd, error) {
			peer := strings.ToLower(v[0])
			if peer == "" {
				return nil, errEmpty
			}
			me := m.b.User()
			conv, ok := protocol.DirectConv(me, peer)
			if !ok {
				if peer == me {
					return nil, errors.New("that is you")
				}
				return nil, fmt.Errorf("%q is not a valid user id", peer)
			}
			s, found := m.list.find(conv)
			if !found {
				s = protocol.Session{Conv: conv, Kind: "direct", Title: peer, Members: []string{me, peer}}
			}
			return m.openChat(s), nil
		})
}

// newGroupDialog asks for a title and members and creates the group.
func (m *Model) newGroupDialog() dialog {
	return newPrompt("New group", "Members: user ids separated by commas. You are in the group too.",
		[]string{"Title", "Members"}, nil,
		func(m *Model, v []string) (tea.Cmd, error) {
			title := v[0]
			if title == "" {
				return nil, errors.New("the group needs a title")
			}
			members, err := parseMembers(v[1], m.b.User())
			if err != nil {
				return nil, err
			}
			b := m.b
			m.creating = title
			return tea.Batch(call(func() { b.CreateGroup(title, members) }),
				m.notify("creating group "+title+"…", false)), nil
		})
}

// parseMembers splits a comma-separated member list, dropping the user and
// duplicates.
func parseMembers(s, me string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
		u := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(f), "@"))
		if u == "" || u == me || seen[u] {
			continue
		}
		if !protocol.ValidUser(u) {
			return nil, fmt.Errorf("%q is not a valid user id", u)
		}
		seen[u] = true
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, errors.New("name at least one other member")
	}
	return out, nil
}

// receiptLines describes who has read and received message seq.
func receiptLines(seq int64, me string, members []protocol.MemberReceipt) []string {
	var read, delivered, waiting []string
	for _, r := range members {
		switch {
		case r.User == me:
		case r.ReadSeq >= seq:
			read = append(read, r.User)
		case r.DeliveredSeq >= seq:
			delivered = append(delivered, r.User)
		default:
			waiting = append(waiting, r.User)
		}
	}
	sort.Strings(read)
	sort.Strings(delivered)
	sort.Strings(waiting)
	total := len(read) + len(delivered) + len(waiting)
	if total == 0 {
		return []string{"No receipts from the other members yet."}
	}
	out := []string{fmt.Sprintf("Read by %d of %d", len(read), total)}
	list := func(label string, users []string) {
		if len(users) == 0 {
			return
		}
		out = append(out, "", fmt.Sprintf("%s (%d)", label, len(users)))
		for _, u := range users {
			out = append(out, "  "+u)
		}
	}
	list(glyphRead+" Read", read)
	list(glyphDelivered+" Delivered, not read", delivered)
	list(glyphSent+" Not delivered yet", waiting)
	return out
}
