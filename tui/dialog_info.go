package tui

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// readReceiptsOffText is what message info says in a direct chat while
// the user's read receipts are off: the server then shows no reads there,
// either way.
const readReceiptsOffText = "your read receipts are off: reads are not shown (S: settings)"

// receiptsTimeout bounds a message-info request.
const receiptsTimeout = 10 * time.Second

// infoDialog is a message's info: who received and read it. It asks the
// backend for every member's boundaries when it opens and fills in when
// the answer comes.
type infoDialog struct {
	asks
	com    *common
	title  string
	body   []string
	id     int             // matches the receipts request that fills it
	seq    int64           // the message
	from   string          // its sender
	later  map[string]bool // the members added after it
	direct bool            // a direct chat's: reads hide when read receipts are off
	width  int
}

// newInfoDialog shows the info of message msg of conv and returns the
// command that fetches its receipts. after holds the messages stored
// after msg: the members their system messages add were not in the group
// when msg was written, and are no receivers of it.
func newInfoDialog(com *common, conv string, msg client.Message, after []client.Message) (*infoDialog, tea.Cmd) {
	preview := com.cells.truncate(oneLine(msg.Body), 40)
	d := &infoDialog{
		com:    com,
		title:  "Message info",
		id:     com.nextID(),
		seq:    msg.Seq,
		from:   msg.From,
		later:  addedUsers(after),
		direct: !strings.HasPrefix(conv, "g:"),
		width:  40,
		body: []string{
			"“" + preview + "”",
			"from " + senderName(com.people, msg.From, com.me()) + " · " + msgTime(&msg, com.now()).Format("2 Jan 15:04") + " · seq " + itoa(msg.Seq),
		},
	}
	if msg.Deleted {
		d.body[0] = deletedText
	}
	if msg.EditedTS > 0 && !msg.Deleted {
		d.body = append(d.body, editedMark+" "+msgTimeMS(msg.EditedTS, com.now()).Format("2 Jan 15:04"))
	}
	d.body = append(d.body, reactionLines(msg.ReactionList())...)
	d.body = append(d.body, "", "loading receipts…")
	b, id, seq, own := com.b, d.id, msg.Seq, msg.From == com.me()
	return d, func() tea.Msg {
		var r receiptsMsg
		if own {
			r.delivered, r.read = b.TickTimes(conv, seq)
		}
		ctx, cancel := context.WithTimeout(context.Background(), receiptsTimeout)
		defer cancel()
		r.members, r.err = b.Receipts(ctx, conv)
		r.id = id
		return r
	}
}

func (d *infoDialog) SetSize(w, _ int) { d.width = w }

func (d *infoDialog) KeyMap() []key.Binding { return []key.Binding{d.com.keys.Dialog.Cancel} }

func (d *infoDialog) Update(msg tea.Msg) (bool, tea.Cmd) {
	switch msg := msg.(type) {
	case receiptsMsg:
		if msg.id != d.id {
			return false, nil
		}
		d.body = d.body[:len(d.body)-1]
		if d.direct && !d.com.people.settings.ReadReceipts {
			// Where blue ticks would show: grey is no fault.
			d.body = append(d.body, readReceiptsOffText, "")
		}
		if d.from == d.com.me() {
			d.body = append(d.body, tickTimeLines(d.com.now(), msg.delivered, msg.read)...)
		}
		if msg.err != nil {
			d.body = append(d.body, "could not load receipts: "+msg.err.Error())
			return false, nil
		}
		d.body = append(d.body, receiptLines(d.seq, d.com.me(), d.from, withoutUsers(msg.members, d.later), d.com.people)...)
	case tea.KeyPressMsg:
		s, k := msg.String(), d.com.keys.Dialog
		if key.Matches(msg, k.Cancel) || key.Matches(msg, k.Confirm) || s == "q" || s == "i" {
			return true, nil
		}
	}
	return false, nil
}

func (d *infoDialog) View() string {
	st := &d.com.st
	var b strings.Builder
	b.WriteString(st.dialogTitle.Render(d.title) + "\n")
	for _, l := range d.body {
		b.WriteString("\n" + d.com.cells.truncate(l, d.width))
	}
	b.WriteString("\n\n" + st.dim.Render("esc closes"))
	return b.String()
}

// receiptLines describes who has read and received message seq from
// sender, for user me: the members other than both, whose boundaries say
// something about it.
func receiptLines(seq int64, me, sender string, members []protocol.MemberReceipt, pp *people) []string {
	var read, delivered, waiting []string
	for _, r := range members {
		switch {
		case r.User == me, r.User == sender:
		case r.ReadSeq >= seq:
			read = append(read, r.User)
		case r.DeliveredSeq >= seq:
			delivered = append(delivered, r.User)
		default:
			waiting = append(waiting, r.User)
		}
	}
	sort.Strings(read)
	sort.Strings(delivered)
	sort.Strings(waiting)
	total := len(read) + len(delivered) + len(waiting)
	if total == 0 {
		if len(members) > 0 {
			return []string{"No other member to receive it."}
		}
		return []string{"No receipts from the other members yet."}
	}
	out := []string{fmt.Sprintf("Read by %d of %d", len(read), total)}
	list := func(label string, users []string) {
		if len(users) == 0 {
			return
		}
		out = append(out, "", fmt.Sprintf("%s (%d)", label, len(users)))
		for _, u := range users {
			out = append(out, "  "+pp.label(u))
		}
	}
	list(glyphRead+" Read", read)
	list(glyphDelivered+" Delivered, not read", delivered)
	list(glyphSent+" Not delivered yet", waiting)
	return out
}

// tickTimeLines say when the user's message was delivered to and read by
// every other member, as this device saw its ticks rise. The server keeps
// no times with receipts (docs/PROTOCOL.md, "Receipt times").
func tickTimeLines(now, delivered, read time.Time) []string {
	when := func(t time.Time) string {
		if t.IsZero() {
			return "not yet"
		}
		t = t.In(now.Location())
		return dayLabel(t, now) + " " + t.Format("15:04")
	}
	return []string{
		glyphDelivered + " Delivered to all: " + when(delivered),
		glyphRead + " Read by all: " + when(read),
		"(when this device saw the ticks rise)",
		"",
	}
}

// reactionLines list who reacted to a message, by reaction, in the order
// the reactions stand.
func reactionLines(rs []protocol.Reaction) []string {
	if len(rs) == 0 {
		return nil
	}
	out := []string{"", "Reactions"}
	for _, r := range rs {
		out = append(out, "  "+sanitize(r.Body)+" "+itoa(int64(len(r.Users)))+": "+strings.Join(r.Users, ", "))
	}
	return out
}
