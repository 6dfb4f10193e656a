package tui

import (
	"slices"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// frequentReactions are the reactions the picker offers first, one key
// each. Each is one wide character, drawn alike by every terminal.
var frequentReactions = []string{"👍", "😂", "🎉", "😮", "😢", "🙏", "🔥", "👀"}

// otherReaction is the picker's entry that asks for any reaction typed.
const otherReaction = "Other…"

// newReactDialog is the reaction picker on message m of conv: the
// frequent reactions (1-8), any other typed, and taking the user's own
// back when there is one.
func newReactDialog(com *common, conv string, m client.Message) dialog {
	mine := ""
	for _, r := range m.ReactionList() {
		if slices.Contains(r.Users, com.me()) {
			mine = r.Body
		}
	}
	options := slices.Clone(frequentReactions)
	for i, r := range options {
		if r == mine {
			options[i] = r + "  (yours)"
		}
	}
	options = append(options, otherReaction)
	if mine != "" {
		options = append(options, "Take back "+mine)
	}
	var d *choiceDialog
	react := func(r string) tea.Cmd {
		_, err := com.b.React(conv, m.MsgID, r)
		return related(conv, "react", err)
	}
	d = newChoice(com, "React to “"+com.cells.truncate(oneLine(m.Body), 30)+"”", options, func(i int) tea.Cmd {
		switch {
		case i < len(frequentReactions):
			if frequentReactions[i] == mine {
				return nil // already given
			}
			return react(frequentReactions[i])
		case options[i] == otherReaction:
			d.ask(showDialogMsg{newPrompt(com, "React with…", "Any text of up to 32 bytes without spaces, an emoji say.",
				[]string{"Reaction"}, nil, func(v []string) (tea.Cmd, error) {
					if v[0] == "" {
						return nil, errEmpty
					}
					if perr := protocol.CheckReaction(v[0]); perr != nil {
						return nil, errorString(perr.Message)
					}
					return react(v[0]), nil
				})})
			return nil
		}
		return react("")
	})
	return d
}
