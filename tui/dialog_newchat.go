package tui

import (
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// newChatDialog asks for a user id and opens the direct chat with them.
func newChatDialog(com *common) dialog {
	var d *promptDialog
	d = newPrompt(com, "New chat", "The chat starts with your first message.", []string{"User id"}, nil,
		func(v []string) (tea.Cmd, error) {
			peer := strings.ToLower(v[0])
			if peer == "" {
				return nil, errEmpty
			}
			me := com.me()
			conv, ok := protocol.DirectConv(me, peer)
			if !ok {
				if peer == me {
					return nil, errors.New("that is you")
				}
				return nil, fmt.Errorf("%q is not a valid user id", peer)
			}
			d.ask(openConvMsg{protocol.Session{Conv: conv, Kind: "direct", Title: peer, Members: []string{me, peer}}})
			return nil, nil
		})
	return d
}
