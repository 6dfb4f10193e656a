package tui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// newLeaveDialog asks before the user leaves a group.
func newLeaveDialog(com *common, s protocol.Session) (dialog, error) {
	title := sessionTitle(&s)
	return newDanger(com, "Leave group",
		"Leave "+title+"? Its messages stay here to read, but you will get no new ones and cannot write in it.", "Leave",
		func() tea.Cmd {
			return tea.Batch(groupOp(com, s.Conv, protocol.GroupLeave, nil, ""), notice("leaving "+title+"…", false))
		}), nil
}
