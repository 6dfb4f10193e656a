package tui

import (
	"strings"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// conversation is the open chat's history: its session, its loaded
// messages, their rendered lines and the scroll position. The chat pane
// holds it, with the input beside it.
type conversation struct {
	conv  string
	sess  protocol.Session
	group bool
	msgs  []client.Message
	ticks protocol.Ticks

	// The unread divider goes above the first message from someone else
	// with unreadFrom < seq <= unreadUpTo (the session when it was opened).
	unreadFrom, unreadUpTo int64
	unreadCount            int64

	lines   []string // rendered lines, width-1 cells (the gutter is added in view)
	lineMsg []int    // message index of each line, -1 for decorations
	msgLine []int    // first line of each message
	msgEnd  []int    // one past the last line of each message
	divLine int      // line of the unread divider, -1 if none
	width   int      // pane width
	height  int      // message area height
	offset  int      // first visible line
	follow  bool     // stick to the newest message

	newBelow int       // messages from others that came below the screen while reading up
	restore  *position // where to put the screen once the first page is in

	sel int // selected message while reading the history, -1 none

	loaded       bool  // the first page arrived
	gen          int   // generation of the open chat, to drop stale pages
	loadingOlder bool  // a local older page is being read
	awaitServer  int64 // LoadOlder was asked for the page below this seq
	reloading    bool  // a reload is in flight
	reloadAgain  bool  // another change came during it

	storeEnd bool  // a former member's: nothing older is stored, and the server may not be asked
	startSeq int64 // the server has nothing older than this the user may read, 0 unknown

	readSent   int64     // highest seq marked read
	lastTyping time.Time // when Typing was last sent
	cache      map[string]cachedLines

	quotes map[int64]client.Message // targets of replies held but not loaded, by seq
	bySeq  map[int64]int            // index in msgs of each loaded stored message
	jumpTo int64                    // the seq of a reply's target being loaded to jump to, 0 none
}

// cachedLines are a message's rendered lines for one layout.
type cachedLines struct {
	key   layoutKey
	lines []string
}

// layoutKey is everything a message's rendering depends on besides its
// sender.
type layoutKey struct {
	w          int
	tick       protocol.Tick
	showSender bool
	seq        int64
	outbox     bool
	failed     bool
	clientTS   int64
	// What an edit, a deletion, a reaction or a reply's target changes.
	body      string
	edited    int64
	deleted   bool
	quote     string
	reactions string
	sender    string // the sender's label, when shown
}

func newConversation(sess protocol.Session, ticks protocol.Ticks, gen int) *conversation {
	c := &conversation{
		conv:        sess.Conv,
		sess:        sess,
		group:       isGroup(&sess),
		ticks:       sess.Ticks.Merge(ticks),
		unreadFrom:  sess.ReadSeq,
		unreadUpTo:  sess.WriteSeq,
		unreadCount: sess.UnreadCount,
		follow:      true,
		sel:         -1,
		gen:         gen,
		readSent:    sess.ReadSeq,
		cache:       map[string]cachedLines{},
		quotes:      map[int64]client.Message{},
	}
	if sess.MarkedUnread {
		// Opening a chat marked unread reads it, which clears the mark.
		c.readSent = max(0, sess.ReadSeq-1)
	}
	return c
}

// msgKey names a message across reloads (an outbox message keeps its
// msg_id when the server stores it).
func msgKey(m *client.Message) string {
	if m.MsgID != "" {
		return m.MsgID
	}
	return "#" + itoa(m.Seq)
}

// oldestSeq is the lowest stored seq loaded, 0 when none is.
func (c *conversation) oldestSeq() int64 {
	for i := range c.msgs {
		if c.msgs[i].Seq > 0 && !c.msgs[i].Outbox {
			return c.msgs[i].Seq
		}
	}
	return 0
}

// newestSeq is the highest stored seq loaded.
func (c *conversation) newestSeq() int64 {
	var n int64
	for i := range c.msgs {
		n = max(n, c.msgs[i].Seq)
	}
	return n
}

// storedCount is the number of loaded messages the server has stored.
func (c *conversation) storedCount() int {
	n := 0
	for i := range c.msgs {
		if c.msgs[i].Seq > 0 {
			n++
		}
	}
	return n
}

// atBeginning says the first message of the conversation is loaded: seq
// 1, or the first one the user may read (a member who joined later).
func (c *conversation) atBeginning() bool {
	o := c.oldestSeq()
	return c.loaded && (o == 1 || (o == 0 && c.sess.WriteSeq == 0) || (o > 0 && o <= c.startSeq))
}

// anchor remembers which message is at the top of the screen.
type anchor struct {
	key   string
	delta int
	ok    bool
}

func (c *conversation) anchor() anchor {
	if c.follow {
		return anchor{}
	}
	for l := c.offset; l < len(c.lineMsg); l++ {
		if i := c.lineMsg[l]; i >= 0 {
			return anchor{key: msgKey(&c.msgs[i]), delta: c.offset - c.msgLine[i], ok: true}
		}
	}
	return anchor{}
}

// setMessages replaces the loaded window, keeping what is on screen where
// it is.
func (c *conversation) setMessages(rc renderCtx, msgs []client.Message) {
	a := c.anchor()
	selKey := ""
	if c.sel >= 0 && c.sel < len(c.msgs) {
		selKey = msgKey(&c.msgs[c.sel])
	}
	c.msgs = msgs
	c.layout(rc, a)
	if selKey != "" {
		c.sel = -1
		for i := range c.msgs {
			if msgKey(&c.msgs[i]) == selKey {
				c.sel = i
				break
			}
		}
		if c.sel < 0 && len(c.msgs) > 0 {
			c.sel = len(c.msgs) - 1
		}
	}
}

// prepend adds an older page above the loaded messages.
func (c *conversation) prepend(rc renderCtx, older []client.Message) {
	oldest := c.oldestSeq()
	keep := older[:0:0]
	for _, m := range older {
		if oldest == 0 || (m.Seq > 0 && m.Seq < oldest) {
			keep = append(keep, m)
		}
	}
	if len(keep) == 0 {
		return
	}
	a := c.anchor()
	if !a.ok && len(c.msgs) > 0 {
		// Following the bottom but the whole chat fits: keep the bottom.
		a = anchor{}
	}
	c.msgs = append(keep, c.msgs...)
	if c.sel >= 0 {
		c.sel += len(keep)
	}
	c.layout(rc, a)
}

// rebuild re-renders in place (ticks, width, typing changed).
func (c *conversation) rebuild(rc renderCtx) { c.layout(rc, c.anchor()) }

// rebuildAtTop re-renders after a change of the top line (the loading
// note), keeping the top on screen when it was.
func (c *conversation) rebuildAtTop(rc renderCtx) {
	top := c.offset == 0 && !c.follow
	c.rebuild(rc)
	if top {
		c.setOffset(0)
	}
}

// maxOffset is the last valid scroll position.
func (c *conversation) maxOffset() int { return max(0, len(c.lines)-c.height) }

// setOffset scrolls to line o and updates follow. Back at the bottom, the
// new messages below have been seen.
func (c *conversation) setOffset(o int) {
	c.offset = max(0, min(o, c.maxOffset()))
	c.follow = c.offset >= c.maxOffset()
	if c.follow {
		c.newBelow = 0
	}
}

// scroll moves by n lines (negative is up).
func (c *conversation) scroll(n int) {
	c.setOffset(c.offset + n)
	c.clampSel()
}

// atTop says the oldest loaded line is on screen.
func (c *conversation) atTop() bool { return c.offset == 0 }

// gotoBottom shows the newest message.
func (c *conversation) gotoBottom() {
	c.setOffset(c.maxOffset())
	c.follow = true
}

// visible says whether line l is on screen.
func (c *conversation) visible(l int) bool { return l >= c.offset && l < c.offset+c.height }

// maxVisibleSeq is the highest stored seq with a line on screen.
func (c *conversation) maxVisibleSeq() int64 {
	var s int64
	end := min(len(c.lines), c.offset+c.height)
	for l := c.offset; l < end; l++ {
		if i := c.lineMsg[l]; i >= 0 && !c.msgs[i].Outbox {
			s = max(s, c.msgs[i].Seq)
		}
	}
	return s
}

// clampSel keeps the selection on a message that is on screen.
func (c *conversation) clampSel() {
	if c.sel < 0 || len(c.msgs) == 0 {
		return
	}
	c.sel = min(c.sel, len(c.msgs)-1)
	if c.msgEnd[c.sel] > c.offset && c.msgLine[c.sel] < c.offset+c.height {
		return
	}
	// Pick the message nearest the side we moved to.
	if c.msgLine[c.sel] < c.offset {
		for i := c.sel; i < len(c.msgs); i++ {
			if c.msgLine[i] >= c.offset {
				c.sel = i
				return
			}
		}
	} else {
		for i := c.sel; i >= 0; i-- {
			if c.msgEnd[i] <= c.offset+c.height {
				c.sel = i
				return
			}
		}
	}
}

// moveSel moves the selection by d messages and scrolls to show it.
func (c *conversation) moveSel(d int) {
	if len(c.msgs) == 0 {
		return
	}
	if c.sel < 0 {
		c.sel = len(c.msgs) - 1
	} else {
		c.sel = max(0, min(c.sel+d, len(c.msgs)-1))
	}
	c.showSel()
}

// showSel scrolls so that the selected message is on screen.
func (c *conversation) showSel() {
	if c.sel < 0 || c.sel >= len(c.msgs) {
		return
	}
	start, end := c.msgLine[c.sel], c.msgEnd[c.sel]
	switch {
	case start < c.offset:
		c.setOffset(start - c.decorationsAbove(c.sel))
	case end > c.offset+c.height:
		c.setOffset(min(start, end-c.height))
	}
}

// decorationsAbove counts the separator lines right above message i, so
// that selecting the first message also shows its day separator.
func (c *conversation) decorationsAbove(i int) int {
	n := 0
	for l := c.msgLine[i] - 1; l >= 0 && c.lineMsg[l] < 0; l-- {
		n++
	}
	return n
}

// lastOwn returns the index of the newest own stored message, -1 if none.
func (c *conversation) lastOwn(me string) int {
	for i := len(c.msgs) - 1; i >= 0; i-- {
		if c.msgs[i].From == me && c.msgs[i].Seq > 0 && c.msgs[i].Kind != protocol.KindSystem {
			return i
		}
	}
	return -1
}

// title is the chat's name for its header.
func (c *conversation) title() string { return sessionTitle(&c.sess) }

// subtitle describes the open chat under its title: a group's members
// and who of them is online; a direct chat's peer online, when last
// seen, or blocked.
func (p *chatPane) subtitle() string {
	c, me, pp := p.c, p.com.me(), p.com.people
	if leftGroup(&c.sess, me) {
		return "not a member · read-only"
	}
	if c.group {
		labels := make([]string, len(c.sess.Members))
		for i, u := range c.sess.Members {
			labels[i] = pp.label(u)
		}
		members := itoa(int64(len(labels))) + " members: " + strings.Join(labels, ", ")
		if on := pp.onlineText(c.sess.Members, me); on != "" {
			return on + " · " + members
		}
		return members
	}
	if _, ok := protocol.IsGateway(c.conv); ok {
		return "business"
	}
	peer := directPeer(&c.sess, me)
	if pp.blocked(peer) {
		return "blocked · ctrl+r unblocks"
	}
	if s := presenceText(pp.presence[peer], pp.live[peer], p.com.now()); s != "" {
		return s
	}
	return "direct chat"
}
