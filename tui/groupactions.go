package tui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// groupAction is one change to a group the UI offers: its entry in the
// group menu, its key in the chat's history, and the dialog that asks for
// it. Any member may make any of them (there are no admins).
//
// A new group action is its dialog's own file and one line here.
type groupAction struct {
	label string
	key   key.Binding
	open  func(com *common, s protocol.Session) (dialog, error)
}

// groupActions are the group menu's entries, in its order.
var groupActions = []groupAction{
	{"Rename…", bind([]string{"r"}, "r", "rename the group"), newRenameDialog},
	{"Add members…", bind([]string{"+"}, "+", "add members"), newAddMembersDialog},
	{"Remove a member…", bind([]string{"-"}, "-", "remove a member"), newRemoveMemberDialog},
	{"Leave the group…", bind([]string{"L"}, "L", "leave the group (asks)"), newLeaveDialog},
}

// notMemberText is what a former member's chat says instead of the input.
const notMemberText = "You are no longer a member of this group"

// leftGroup says s is a group the user is no longer a member of. One who
// left or was removed keeps the session, with no members, and may do
// nothing more there: every frame about the group is forbidden.
func leftGroup(s *protocol.Session, me string) bool {
	return s.Kind == "group" && !slices.Contains(s.Members, me)
}

// sessionTitle is a session's name for dialogs and notices.
func sessionTitle(s *protocol.Session) string {
	if t := oneLine(s.Title); t != "" {
		return t
	}
	return s.Conv
}

// groupRefusal says why user me cannot change s, "" when they can.
func groupRefusal(s *protocol.Session, me string) string {
	switch {
	case !isGroup(s):
		return "not a group chat"
	case leftGroup(s, me):
		return "you are no longer a member of " + sessionTitle(s)
	}
	return ""
}

// groupActionKey returns the group action bound to msg, if any.
func groupActionKey(msg tea.KeyPressMsg) (groupAction, bool) {
	for _, a := range groupActions {
		if key.Matches(msg, a.key) {
			return a, true
		}
	}
	return groupAction{}, false
}

// startGroupAction opens the dialog of action a on group s, or returns
// the notice that says why it cannot.
func startGroupAction(com *common, s protocol.Session, a groupAction) (dialog, tea.Cmd) {
	if why := groupRefusal(&s, com.me()); why != "" {
		return nil, notice(why, false)
	}
	d, err := a.open(com, s)
	if err != nil {
		return nil, notice(err.Error(), false)
	}
	return d, nil
}

// groupMenu offers the group actions on s.
func groupMenu(com *common, s protocol.Session) (dialog, tea.Cmd) {
	if why := groupRefusal(&s, com.me()); why != "" {
		return nil, notice(why, false)
	}
	labels := make([]string, len(groupActions))
	for i, a := range groupActions {
		labels[i] = a.label
	}
	var d *choiceDialog
	d = newChoice(com, "Group "+sessionTitle(&s), labels, func(i int) tea.Cmd {
		next, cmd := startGroupAction(com, s, groupActions[i])
		if next != nil {
			d.ask(showDialogMsg{next})
		}
		return cmd
	})
	return d, nil
}

// groupOp returns the command that asks the backend for a change of conv.
func groupOp(com *common, conv, op string, users []string, title string) tea.Cmd {
	b := com.b
	return call(func() { b.GroupOp(conv, op, users, title) })
}

// groupHelp sums the group actions' keys up in one help line.
func groupHelp() key.Binding {
	ks := make([]string, len(groupActions))
	for i, a := range groupActions {
		ks[i] = a.key.Help().Key
	}
	return bind(ks, strings.Join(ks, "/"), "group: rename, add, remove, leave")
}
