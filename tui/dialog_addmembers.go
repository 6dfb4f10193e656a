package tui

import (
	"errors"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// newAddMembersDialog asks for the users to add to a group.
func newAddMembersDialog(com *common, s protocol.Session) (dialog, error) {
	title := sessionTitle(&s)
	return newPrompt(com, "Add to "+title, "User ids separated by commas.", []string{"Members"}, nil,
		func(v []string) (tea.Cmd, error) {
			users, err := parseMembers(v[0], com.me())
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
			return tea.Batch(groupOp(com, s.Conv, protocol.GroupAdd, add, ""),
				notice("adding "+strings.Join(add, ", ")+" to "+title+"…", false)), nil
		}), nil
}
