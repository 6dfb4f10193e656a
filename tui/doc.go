// Package tui is the terminal client's user interface: a Bubble Tea
// program over the client engine, seen through the Backend interface.
//
// The screen is the session list (sorted by the engine: pinned first, then
// newest), the open chat with its input, and a status bar. On terminals at
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
// Engine events arrive through a command that waits on Backend.Events and
// is issued again after each event; every backend call runs in a command.
// Timers use tea.Tick. Options.Now injects the clock.
//
// Run it with:
//
//	p := tea.NewProgram(tui.New(engine, tui.Options{}))
//	_, err := p.Run()
//
// Press ? (or F1 while typing) for every key binding.
package tui
