package tui

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// newRemoveMemberDialog picks a member of a group to remove, the last
// option typing user ids instead (quicker in a large group).
func newRemoveMemberDialog(com *common, s protocol.Session) (dialog, error) {
	me, title := com.me(), sessionTitle(&s)
	var others []string
	for _, u := range s.Members {
		if u != me {
			others = append(others, u)
		}
	}
	if len(others) == 0 {
		return nil, errors.New("nobody else is in " + title)
	}
	remove := func(users []string) tea.Cmd {
		return tea.Batch(groupOp(com, s.Conv, protocol.GroupRemove, users, ""),
			notice("removing "+strings.Join(users, ", ")+" from "+title+"…", false))
	}
	typed := newPrompt(com, "Remove from "+title, "User ids separated by commas.", []string{"Members"}, nil,
		func(v []string) (tea.Cmd, error) {
			users, err := parseMembers(v[0], me)
			if err != nil {
				return nil, err
			}
			for _, u := range users {
				if !slices.Contains(others, u) {
					return nil, fmt.Errorf("%s is not in the group", u)
				}
			}
			return remove(users), nil
		})
	options := append(slices.Clone(others), "Type user ids…")
	var d *choiceDialog
	d = newChoice(com, "Remove from "+title, options, func(i int) tea.Cmd {
		if i == len(others) {
			d.ask(showDialogMsg{typed})
			return nil
		}
		return remove(others[i : i+1])
	})
	return d, nil
}
