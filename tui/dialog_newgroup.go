package tui

import (
	"errors"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
)

// newGroupDialog asks for a title and members and creates the group.
func newGroupDialog(com *common) dialog {
	var d *promptDialog
	d = newPrompt(com, "New group", "Members: user ids separated by commas. You are in the group too.",
		[]string{"Title", "Members"}, nil,
		func(v []string) (tea.Cmd, error) {
			title := v[0]
			if title == "" {
				return nil, errors.New("the group needs a title")
			}
			members, err := parseMembers(v[1], com.me())
			if err != nil {
				return nil, err
			}
			b, key := com.b, client.NewGroupKey()
			d.ask(groupCreatingMsg{key: key, title: title})
			return tea.Batch(call(func() { b.CreateGroup(key, title, members) }),
				notice("creating group "+title+"…", false)), nil
		})
	return d
}
