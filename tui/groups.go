package tui

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// groupAct is one of the changes to a group the UI offers. Any member may
// make any of them (there are no admins).
type groupAct int

const (
	actRename groupAct = iota // a new title
	actAdd                    // add members
	actRemove                 // remove members
	actLeave                  // the user leaves
)

// groupActs are the group menu's entries, in its order.
var groupActs = []struct {
	act   groupAct
	label string
}{
	{actRename, "Rename…"},
	{actAdd, "Add members…"},
	{actRemove, "Remove a member…"},
	{actLeave, "Leave the group…"},
}

// notMemberText is what a former member's chat says instead of the input.
const notMemberText = "You are no longer a member of this group"

// leftGroup says s is a group the user is no longer a member of. One who
// left or was removed keeps the session, with no members, and may do
// nothing more there: every frame about the group is forbidden.
func leftGroup(s *protocol.Session, me string) bool {
	return s.Kind == "group" && !slices.Contains(s.Members, me)
}

// readOnly says the open chat is a group the user has left: its stored
// messages show, but nothing is sent, typed or marked read there.
func (m *Model) readOnly() bool {
	return m.chat != nil && leftGroup(&m.chat.sess, m.b.User())
}

// sessionTitle is a session's name for dialogs and notices.
func sessionTitle(s *protocol.Session) string {
	if t := oneLine(s.Title); t != "" {
		return t
	}
	return s.Conv
}

// groupRefusal says why the user cannot change s, "" when they can.
func (m *Model) groupRefusal(s *protocol.Session) string {
	switch {
	case !isGroup(s):
		return "not a group chat"
	case leftGroup(s, m.b.User()):
		return "you are no longer a member of " + sessionTitle(s)
	}
	return ""
}

// groupMenuKey opens the group menu on what the keys act on: the selected
// list row, or the open chat.
func (m *Model) groupMenuKey() tea.Cmd {
	if m.focus != focusList && m.chat != nil {
		return m.groupMenu(m.chat.sess)
	}
	r, ok := m.list.selected()
	switch {
	case !ok:
		return nil
	case r.kind != rowSession:
		return m.notify("not a group chat", false)
	}
	return m.groupMenu(*r.sess)
}

// groupMenu offers the group actions on s.
func (m *Model) groupMenu(s protocol.Session) tea.Cmd {
	if why := m.groupRefusal(&s); why != "" {
		return m.notify(why, false)
	}
	labels := make([]string, len(groupActs))
	for i, a := range groupActs {
		labels[i] = a.label
	}
	m.dialog = &choiceDialog{title: "Group " + sessionTitle(&s), options: labels, choose: func(m *Model, i int) tea.Cmd {
		return m.groupAction(s, groupActs[i].act)
	}}
	return nil
}

// groupAction starts a change of group s: a prompt, a choice or a
// confirmation, which calls the backend.
func (m *Model) groupAction(s protocol.Session, a groupAct) tea.Cmd {
	if why := m.groupRefusal(&s); why != "" {
		return m.notify(why, false)
	}
	b, conv, title, me := m.b, s.Conv, sessionTitle(&s), m.b.User()
	op := func(op string, users []string, newTitle string) tea.Cmd {
		return call(func() { b.GroupOp(conv, op, users, newTitle) })
	}
	switch a {
	case actRename:
		m.dialog = newPrompt("Rename "+title, "Every member sees the new name.", []string{"Title"}, []string{s.Title},
			func(m *Model, v []string) (tea.Cmd, error) {
				t := v[0]
				if perr := protocol.CheckTitle(t, protocol.DefaultMaxTitle); perr != nil {
					return nil, errors.New(perr.Message)
				}
				if t == s.Title {
					return nil, nil // nothing to change
				}
				return tea.Batch(op(protocol.GroupRename, nil, t), m.notify("renaming "+title+" to "+t+"…", false)), nil
			})
	case actAdd:
		m.dialog = newPrompt("Add to "+title, "User ids separated by commas.", []string{"Members"}, nil,
			func(m *Model, v []string) (tea.Cmd, error) {
				users, err := parseMembers(v[0], me)
				if err != nil {
					return nil, err
				}
				var add []string
				for _, u := range users {
					if !slices.Contains(s.Members, u) {
						add = append(add, u)
					}
				}
				if len(add) == 0 {
					return nil, errors.New("already in the group: " + strings.Join(users, ", "))
				}
				return tea.Batch(op(protocol.GroupAdd, add, ""),
					m.notify("adding "+strings.Join(add, ", ")+" to "+title+"…", false)), nil
			})
	case actRemove:
		remove := func(m *Model, users []string) tea.Cmd {
			return tea.Batch(op(protocol.GroupRemove, users, ""),
				m.notify("removing "+strings.Join(users, ", ")+" from "+title+"…", false))
		}
		return m.removeDialog(s, remove)
	case actLeave:
		m.dialog = &confirmDialog{title: "Leave group",
			text: "Leave " + title + "? Its messages stay here to read, but you will get no new ones and cannot write in it.",
			yes: func(m *Model) tea.Cmd {
				return tea.Batch(op(protocol.GroupLeave, nil, ""), m.notify("leaving "+title+"…", false))
			}}
	}
	return nil
}

// removeDialog picks a member of s to remove, the last option typing user
// ids instead (quicker in a large group).
func (m *Model) removeDialog(s protocol.Session, remove func(*Model, []string) tea.Cmd) tea.Cmd {
	me, title := m.b.User(), sessionTitle(&s)
	var others []string
	for _, u := range s.Members {
		if u != me {
			others = append(others, u)
		}
	}
	if len(others) == 0 {
		return m.notify("nobody else is in "+title, false)
	}
	typed := newPrompt("Remove from "+title, "User ids separated by commas.", []string{"Members"}, nil,
		func(m *Model, v []string) (tea.Cmd, error) {
			users, err := parseMembers(v[0], me)
			if err != nil {
				return nil, err
			}
			for _, u := range users {
				if !slices.Contains(others, u) {
					return nil, fmt.Errorf("%s is not in the group", u)
				}
			}
			return remove(m, users), nil
		})
	options := append(slices.Clone(others), "Type user ids…")
	m.dialog = &choiceDialog{title: "Remove from " + title, options: options, choose: func(m *Model, i int) tea.Cmd {
		if i == len(others) {
			m.dialog = typed
			return nil
		}
		return remove(m, others[i:i+1])
	}}
	return nil
}
