package tui

import (
	"errors"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// newRenameDialog asks for a group's new title.
func newRenameDialog(com *common, s protocol.Session) (dialog, error) {
	title := sessionTitle(&s)
	return newPrompt(com, "Rename "+title, "Every member sees the new name.", []string{"Title"}, []string{s.Title},
		func(v []string) (tea.Cmd, error) {
			t := v[0]
			if perr := protocol.CheckTitle(t, protocol.DefaultMaxTitle); perr != nil {
				return nil, errors.New(perr.Message)
			}
			if t == s.Title {
				return nil, nil // nothing to change
			}
			return tea.Batch(groupOp(com, s.Conv, protocol.GroupRename, nil, t),
				notice("renaming "+title+" to "+t+"…", false)), nil
		}), nil
}
