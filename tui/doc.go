// Package tui is the terminal client's user interface: a Bubble Tea
// program over the client, seen through the Backend interface.
//
// The screen is the session list (sorted by the client: pinned first, then
// newest, folders among them), the open chat with its input, and a status
// bar. On terminals at
// least 100 columns wide the list and the chat are side by side; narrower,
// the chat replaces the list. Category folders and sub-business lists open
// from their rows. The chat shows message bubbles with ticks (a clock while
// in the outbox, then ✓, grey ✓✓, blue ✓✓), day separators, the unread
// divider and typing indicators, and loads older pages from the local store,
// then from the server, when scrolled to the top.
//
// Read receipts are sent only for messages that have been on screen in an
// open chat while the terminal had focus (the view asks for focus reports).
//
// # Components
//
// Each part of the screen is a component that owns its state, its keys
// (keys.go), its Update, its View and its SetSize:
//
//   - listPane (list.go, listrows.go, listview.go, listfilter.go,
//     sessionactions.go): the session list, its folder stack, the search
//     by title, loading the lists and acting on the selected session.
//   - chatPane (chat.go, chatload.go, chatinput.go, chatframe.go,
//     chatposition.go, drafts.go): the open chat, that is its history (a
//     conversation, conversation.go and chatview.go: messages, layout,
//     scrolling) and the input; it loads pages, sends (splitting a text
//     over the limit when asked), keeps drafts, marks read, remembers where
//     the user left each chat and jumps to a search's hit.
//   - statusBar (statusbar.go): the connection, the identity, notices and
//     the retry countdown.
//   - dialogs (dialog.go and dialog_*.go): each kind in its own file,
//     behind the dialog interface; a dialog does what it is for itself.
//   - helpScreen (help.go): every binding.
//
// The root Model (model.go, keyroute.go, events.go, mouse.go, notify.go,
// view.go) routes each message by its type to the component that owns it
// and owns only the navigation: which pane has the keys, what is on
// screen, the dialog over it, and the bell and desktop notifications for
// what arrives out of sight. A component asks the root for navigation
// (open a chat, show a dialog, leave the chat) through its asks, which the
// root handles before the next message. What both panes show (ticks,
// typing, drafts) lives in live.go; what is known of the people shown
// (names, presence, the user's settings), and the watch list the root
// gives the client, in people.go, with the chat menu, blocking and the
// request bar in peopleactions.go; the client, options, theme (styles.go:
// a dark and a light palette, glyphs for terminals without colours), how
// text is measured (format.go: as the renderer draws it) and keys that
// every component reads are in common.go.
//
// A new dialog is its own file; showing it is one line of routing: a
// group action, for instance, is its dialog's file and one line in
// groupActions (groupactions.go), as the rename dialog (dialog_rename.go)
// shows.
//
// Client events arrive through a command that waits on Backend.Events and
// is issued again after each event; every backend call runs in a command.
// Timers use tea.Tick. Options.Now injects the clock.
//
// Run it with:
//
//	p := tea.NewProgram(tui.New(client, tui.Options{}))
//	_, err := p.Run()
//
// Press ? (or F1 while typing) for every key binding.
package tui
