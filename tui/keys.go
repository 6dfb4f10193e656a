package tui

import (
	"charm.land/bubbles/v2/key"
)

func bind(keys []string, helpKey, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(helpKey, desc))
}

// globalKeys work everywhere.
type globalKeys struct {
	Quit      key.Binding
	Help      key.Binding
	NextFocus key.Binding
	PrevFocus key.Binding
	GroupMenu key.Binding // the chat menu of the selected row or the open chat: a group's actions, block
	Reconnect key.Binding // offline: try to connect now
	SearchAll key.Binding // the messages of every chat
	Status    key.Binding // the connection and the last error, whole
}

// listKeys act on the session list.
type listKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Open, Back                              key.Binding
	Pin, Mute, MarkUnread, Delete, Category key.Binding
	NewChat, NewGroup, Search, Quit         key.Binding
	Settings                                key.Binding // name, last seen, read receipts, blocked
}

// inputKeys act while typing a message.
type inputKeys struct {
	Send, Newline        key.Binding
	ScrollUp, ScrollDown key.Binding
	PageUp, PageDown     key.Binding
	Info, Back           key.Binding
	// EditLast is ↑ in an empty input when the newest message is the
	// user's own (as in Slack and Telegram); ↑ scrolls otherwise.
	EditLast key.Binding
}

// historyKeys act while reading the history (the message pane has focus).
// A group chat's history also takes the group actions' keys (groupActions).
type historyKeys struct {
	Up, Down, PageUp, PageDown, HalfUp, HalfDown, Top, Bottom key.Binding
	Info, Input, Back, Search                                 key.Binding
	OpenLink, Copy, FirstUnread                               key.Binding
	// The selected message's actions. Deleting asks first.
	Reply, Edit, DeleteMsg, React, Quoted key.Binding
	// Request sums up the keys of a message request's bar (request.go):
	// r reply, b block, d delete; they take the place of b and d there.
	Request key.Binding
}

// dialogKeys act in dialogs and on the help screen.
type dialogKeys struct {
	Confirm, Cancel, Up, Down, NextField key.Binding
}

// keyMap holds every binding; each pane reads its own group.
type keyMap struct {
	Global  globalKeys
	List    listKeys
	Input   inputKeys
	History historyKeys
	Dialog  dialogKeys
}

func defaultKeyMap() keyMap {
	return keyMap{
		Global: globalKeys{
			Quit:      bind([]string{"ctrl+c"}, "ctrl+c", "quit"),
			Help:      bind([]string{"?", "f1"}, "?/f1", "help (not while typing: f1)"),
			NextFocus: bind([]string{"tab"}, "tab", "next pane: list → input → history"),
			PrevFocus: bind([]string{"shift+tab"}, "shift+tab", "previous pane"),
			// ctrl+g would be the textarea's select all.
			GroupMenu: bind([]string{"ctrl+r"}, "ctrl+r", "chat menu: group, block / unblock"),
			Reconnect: bind([]string{"ctrl+l"}, "ctrl+l", "reconnect now (offline)"),
			SearchAll: bind([]string{"ctrl+s"}, "ctrl+s", "search the messages of every chat"),
			Status:    bind([]string{"ctrl+x"}, "ctrl+x", "status: the whole error"),
		},
		List: listKeys{
			Up:         bind([]string{"up", "k", "ctrl+p"}, "↑/k", "previous chat"),
			Down:       bind([]string{"down", "j", "ctrl+n"}, "↓/j", "next chat"),
			PageUp:     bind([]string{"pgup", "ctrl+b", "ctrl+u"}, "pgup", "page up"),
			PageDown:   bind([]string{"pgdown", "ctrl+f", "ctrl+d"}, "pgdn", "page down"),
			Top:        bind([]string{"home", "g"}, "g/home", "first chat"),
			Bottom:     bind([]string{"end", "G"}, "G/end", "last chat"),
			Open:       bind([]string{"enter", "l", "right"}, "enter/l/→", "open chat, folder or business"),
			Back:       bind([]string{"esc", "h", "left", "backspace"}, "esc/h/←", "up a folder"),
			Pin:        bind([]string{"p"}, "p", "pin / unpin"),
			Mute:       bind([]string{"m"}, "m", "mute (8h, 1 week, always) / unmute"),
			MarkUnread: bind([]string{"u"}, "u", "mark unread / read"),
			Delete:     bind([]string{"d", "delete"}, "d/del", "delete chat (asks)"),
			Category:   bind([]string{"c"}, "c", "move to category (folder)"),
			NewChat:    bind([]string{"n"}, "n", "new chat by user id"),
			NewGroup:   bind([]string{"N"}, "N", "new group"),
			Search:     bind([]string{"/"}, "/", "search by title (or type a word)"),
			Quit:       bind([]string{"q"}, "q", "quit (asks: q again quits)"),
			Settings:   bind([]string{"S"}, "S", "settings: name, privacy, blocked users"),
		},
		Input: inputKeys{
			Send:       bind([]string{"enter"}, "enter", "send"),
			Newline:    bind([]string{"alt+enter", "ctrl+j", "shift+enter"}, "alt+enter/ctrl+j", "new line"),
			ScrollUp:   bind([]string{"up"}, "↑", "scroll up (input empty)"),
			ScrollDown: bind([]string{"down"}, "↓", "scroll down (input empty)"),
			PageUp:     bind([]string{"pgup"}, "pgup", "page up"),
			PageDown:   bind([]string{"pgdown"}, "pgdn", "page down"),
			Info:       bind([]string{"ctrl+o"}, "ctrl+o", "info of my last message"),
			Back:       bind([]string{"esc"}, "esc", "back to the list"),
			EditLast:   bind([]string{"up"}, "↑", "edit the newest if mine"),
		},
		History: historyKeys{
			Up:       bind([]string{"up", "k"}, "↑/k", "previous message"),
			Down:     bind([]string{"down", "j"}, "↓/j", "next message"),
			PageUp:   bind([]string{"pgup", "b", "ctrl+b"}, "pgup/b", "page up (loads older)"),
			PageDown: bind([]string{"pgdown", "f", "space", "ctrl+f"}, "pgdn/f", "page down"),
			HalfUp:   bind([]string{"u", "ctrl+u"}, "u", "half page up"),
			HalfDown: bind([]string{"d", "ctrl+d"}, "d", "half page down"),
			Top:      bind([]string{"g", "home"}, "g/home", "oldest loaded (loads older)"),
			Bottom:   bind([]string{"G", "end"}, "G/end", "jump to the newest"),
			Info:     bind([]string{"i", "ctrl+o"}, "i", "message info (receipts)"),
			Input:    bind([]string{"enter", "a"}, "enter/a", "write a message"),
			Back:     bind([]string{"esc", "q", "h", "left"}, "esc/q", "back to the list"),
			Search:   bind([]string{"/"}, "/", "search the messages"),
			OpenLink: bind([]string{"o"}, "o", "open the selected message's link"),
			Copy:     bind([]string{"y"}, "y", "copy the selected message (OSC 52)"),
			// n as in next unread.
			FirstUnread: bind([]string{"n"}, "n", "jump to the first unread"),
			// r is the group's rename, d half a page down.
			Reply:     bind([]string{"R"}, "R", "reply to the selected message"),
			Edit:      bind([]string{"e"}, "e", "edit my selected message"),
			DeleteMsg: bind([]string{"x", "delete"}, "x/del", "delete my message for everyone (asks)"),
			React:     bind([]string{":"}, ":", "react to the selected message"),
			Quoted:    bind([]string{"t"}, "t", "jump to the message a reply quotes"),
			Request:   bind([]string{"r", "b", "d"}, "r/b/d", "a request: reply, block, delete (ask)"),
		},
		Dialog: dialogKeys{
			Confirm:   bind([]string{"enter"}, "enter", "confirm / choose"),
			Cancel:    bind([]string{"esc"}, "esc", "cancel"),
			Up:        bind([]string{"up", "k"}, "↑/k", "previous option"),
			Down:      bind([]string{"down", "j"}, "↓/j", "next option"),
			NextField: bind([]string{"tab"}, "tab", "next field"),
		},
	}
}

// helpSections lists every binding, grouped, for the help screen.
func (k keyMap) helpSections() []helpSection {
	l, in, h, g, d := k.List, k.Input, k.History, k.Global, k.Dialog
	return []helpSection{
		{"Chats", []key.Binding{l.Up, l.Down, l.PageUp, l.PageDown, l.Top, l.Bottom, l.Open, l.Back, l.Search}},
		{"Chat actions", []key.Binding{l.Pin, l.Mute, l.MarkUnread, l.Delete, l.Category, l.NewChat, l.NewGroup, l.Settings, l.Quit}},
		{"Writing", []key.Binding{in.Send, in.Newline, in.ScrollUp, in.ScrollDown, in.EditLast, in.PageUp, in.PageDown, in.Info, in.Back}},
		{"Reading history", []key.Binding{h.Up, h.Down, h.PageUp, h.PageDown, h.HalfUp, h.HalfDown, h.Top, h.Bottom, h.FirstUnread, h.Info, h.OpenLink, h.Copy, h.Input, h.Back, h.Search,
			groupHelp()}},
		{"Everywhere", []key.Binding{g.Help, g.NextFocus, g.PrevFocus, g.Quit,
			bind([]string{"wheel"}, "mouse wheel", "scroll"), bind([]string{"click"}, "click", "select / open a chat"), g.GroupMenu, g.Reconnect, g.SearchAll, g.Status}},
		{"Dialogs", []key.Binding{d.Confirm, d.Cancel, d.Up, d.Down, d.NextField,
			bind([]string{"y"}, "y / n", "yes / no (delete, quit: ←/→ enter)"), bind([]string{"1"}, "1-9", "pick an option"),
			bind([]string{"space"}, "space", "change a setting (also ←/→)")}},
		{"The selected message (history)", []key.Binding{h.Reply, h.Edit, h.DeleteMsg, h.React, h.Quoted}},
		{"A message request (history)", []key.Binding{h.Request}},
	}
}

// ShortHelp returns the bindings shown in the list footer hint.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.List.Open, k.List.NewChat, k.List.Pin, k.List.Mute, k.Global.Help}
}

// FullHelp returns every binding in columns.
func (k keyMap) FullHelp() [][]key.Binding {
	var out [][]key.Binding
	for _, s := range k.helpSections() {
		out = append(out, s.keys)
	}
	return out
}
