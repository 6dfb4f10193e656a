package store

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/imcore/im/protocol"
)

// A TargetState is stored as text every backend keeps in one column or
// attribute, read with every row of a history page: a compact form that
// decodes without reflection. Fields are separated by ';', lists by ',';
// strings, which may hold anything, are length-prefixed:
//
//	t2;EDIT_SEQ;EDITED_TS;FLAGS;EDIT,EDIT,…;LEN:BODY[;ENTRIES,USERS;GROUP;GROUP;…]
//	GROUP = LEN:REACTION,LEN:USER,SEQ,LEN:USER,SEQ,…
//
// FLAGS is 1 for Deleted plus 2 for Erased. The reactions, when there are
// any, are stored as a read shows them (TargetState.ReactionList), so
// that a read only copies them out: one group per distinct reaction
// standing, in the aggregate's order, holding its users in order, each
// with the seq of its reaction; then, if any user removed a reaction, a
// last group with an empty reaction holding those users. ENTRIES and
// USERS count the standing groups and their users, so that a read
// allocates the aggregate once.
//
// The first form, t1, stored each user's reaction in user order instead
// (";LEN:USER,SEQ,LEN:BODY" each, after the body); it is still read, and
// rewritten as t2 by the next relation applied to the message.

// The stored forms' versions, which start every stored state: stateMagic
// is the one written.
const (
	stateMagic   = "t2;"
	stateMagicV1 = "t1;"
)

// Encode is the state as stored, "" for a nil state.
func (t *TargetState) Encode() (string, error) {
	if t == nil {
		return "", nil
	}
	var b strings.Builder
	b.WriteString(stateMagic)
	b.WriteString(strconv.FormatInt(t.EditSeq, 10))
	b.WriteByte(';')
	b.WriteString(strconv.FormatInt(t.EditedTS, 10))
	b.WriteByte(';')
	flags := 0
	if t.Deleted {
		flags |= 1
	}
	if t.Erased {
		flags |= 2
	}
	b.WriteString(strconv.Itoa(flags))
	b.WriteByte(';')
	for i, seq := range t.Edits {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(seq, 10))
	}
	b.WriteByte(';')
	writeString(&b, t.Body)
	if len(t.Reactions) == 0 {
		return b.String(), nil
	}
	standing := t.standing()
	var bodies []string // the distinct reactions, in the aggregate's order
	for _, r := range standing {
		if !slices.Contains(bodies, r.Body) {
			bodies = append(bodies, r.Body)
		}
	}
	b.WriteByte(';')
	b.WriteString(strconv.Itoa(len(bodies)))
	b.WriteByte(',')
	b.WriteString(strconv.Itoa(len(standing)))
	writeUsers := func(body string, rs []StandingReaction) {
		b.WriteByte(';')
		writeString(&b, body)
		for _, r := range rs {
			if r.Body == body {
				b.WriteByte(',')
				writeString(&b, r.User)
				b.WriteByte(',')
				b.WriteString(strconv.FormatInt(r.Seq, 10))
			}
		}
	}
	for _, body := range bodies {
		writeUsers(body, standing)
	}
	if len(standing) < len(t.Reactions) {
		writeUsers("", t.Reactions)
	}
	return b.String(), nil
}

// writeString writes s length-prefixed.
func writeString(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}

// DecodeTargetState reads a stored state, of either form; "" is nil (no
// relation ever touched the message).
func DecodeTargetState(s string) (*TargetState, error) {
	if s == "" {
		return nil, nil
	}
	d, v1, err := newStateDecoder(s)
	if err != nil {
		return nil, err
	}
	var t TargetState
	var flags int64
	t.EditSeq, t.EditedTS, flags, t.Body = d.header(func(seq int64) { t.Edits = append(t.Edits, seq) })
	t.Deleted, t.Erased = flags&1 != 0, flags&2 != 0
	switch {
	case v1:
		for d.err == nil && d.at < len(d.s) {
			t.Reactions = append(t.Reactions, d.standingReaction())
		}
	case d.skip(';'):
		d.int(',') // the counts, for reads
		d.num()
		removed := false
		for d.err == nil && d.at < len(d.s) {
			if removed {
				d.err = errState // the group of removed reactions is the last
				break
			}
			d.expect(';')
			body := d.str()
			removed = body == ""
			n := len(t.Reactions)
			for d.skip(',') {
				r := StandingReaction{User: d.str(), Body: body}
				d.expect(',')
				r.Seq = d.num()
				t.Reactions = append(t.Reactions, r)
			}
			if len(t.Reactions) == n {
				d.expect(',') // a group holds at least one user
			}
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("a message's relation state at byte %d: %w", d.at, d.err)
	}
	if d.at != len(d.s) {
		return nil, fmt.Errorf("a message's relation state at byte %d: %w", d.at, errState)
	}
	// Apply finds a user's reaction by user; the order is total, so that
	// a state reads back the same whatever order it was stored in.
	slices.SortFunc(t.Reactions, func(a, b StandingReaction) int {
		return cmp.Or(strings.Compare(a.User, b.User), cmp.Compare(a.Seq, b.Seq), strings.Compare(a.Body, b.Body))
	})
	return &t, nil
}

// newStateDecoder starts reading stored state s after its version, and
// reports whether it is of the first form.
func newStateDecoder(s string) (d stateDecoder, v1 bool, err error) {
	switch {
	case strings.HasPrefix(s, stateMagic):
	case strings.HasPrefix(s, stateMagicV1):
		v1 = true
	default:
		return d, false, errors.New("a message's relation state: not a stored state")
	}
	return stateDecoder{s: s, at: len(stateMagic)}, v1, nil
}

// header reads the fields both forms start with, up to and including the
// body, passing each edit's seq to edit.
func (d *stateDecoder) header(edit func(int64)) (editSeq, editedTS, flags int64, body string) {
	editSeq = d.int(';')
	editedTS = d.int(';')
	flags = d.int(';')
	if !d.skip(';') {
		for {
			seq := d.num()
			if edit != nil {
				edit(seq)
			}
			if d.err != nil || d.skip(';') {
				break
			}
			d.expect(',')
		}
	}
	return editSeq, editedTS, flags, d.str()
}

// stateDecoder reads a stored state; its first error stops it.
type stateDecoder struct {
	s   string
	at  int
	err error
}

var errState = errors.New("malformed")

// expect consumes c.
func (d *stateDecoder) expect(c byte) {
	if d.err == nil && !d.skip(c) {
		d.err = errState
	}
}

// skip consumes c if it is next.
func (d *stateDecoder) skip(c byte) bool {
	if d.err == nil && d.at < len(d.s) && d.s[d.at] == c {
		d.at++
		return true
	}
	return false
}

// int reads a number and the separator sep after it.
func (d *stateDecoder) int(sep byte) int64 {
	n := d.num()
	d.expect(sep)
	return n
}

// num reads a decimal number, '-' signed. It works on locals, which the
// compiler keeps in registers: a page's read spends most of its decoding
// here.
func (d *stateDecoder) num() int64 {
	if d.err != nil {
		return 0
	}
	s, at := d.s, d.at
	neg := at < len(s) && s[at] == '-'
	if neg {
		at++
	}
	start := at
	var n int64
	for ; at < len(s); at++ {
		c := s[at] - '0'
		if c > 9 {
			break
		}
		if n > (1<<63-1)/10 {
			d.err = errState
			return 0
		}
		n = n*10 + int64(c)
	}
	d.at = at
	if at == start || n < 0 {
		d.err = errState
		return 0
	}
	if neg {
		return -n
	}
	return n
}

// skipNum passes over a number that is not needed, as num would.
func (d *stateDecoder) skipNum() {
	if d.err != nil {
		return
	}
	s, at := d.s, d.at
	if at < len(s) && s[at] == '-' {
		at++
	}
	start := at
	for at < len(s) && s[at]-'0' <= 9 {
		at++
	}
	if at == start {
		d.err = errState
	}
	d.at = at
}

// str reads a length-prefixed string.
func (d *stateDecoder) str() string {
	n := d.num()
	if d.err != nil || d.at >= len(d.s) || d.s[d.at] != ':' || n < 0 || n > int64(len(d.s)-d.at-1) {
		if d.err == nil {
			d.err = errState
		}
		return ""
	}
	start := d.at + 1
	d.at = start + int(n)
	return d.s[start:d.at]
}

// ShowStored is DecodeTargetState(state).Show(m) in one pass over the
// stored text, without building the state: what every read of a message
// runs on its row. It reports whether m shows the body stored in its row
// (see TargetState.ShowsStoredBody); a message with no state ("") shows
// it as stored.
func ShowStored(m *protocol.Message, state string) (showsStoredBody bool, err error) {
	if state == "" {
		return true, nil
	}
	d, v1, err := newStateDecoder(state)
	if err != nil {
		return false, err
	}
	editSeq, editedTS, flags, body := d.header(nil)
	var reactions *[]protocol.Reaction
	if v1 {
		if list := d.aggregateV1(); len(list) > 0 {
			reactions = &list
		}
	} else {
		reactions = d.reactions()
	}
	if d.err != nil {
		return false, fmt.Errorf("a message's relation state at byte %d: %w", d.at, d.err)
	}
	deleted, erased := flags&1 != 0, flags&2 != 0
	switch {
	case deleted:
		m.Body, m.Deleted, m.EditedTS = "", true, 0
	case erased:
		m.Body = ""
	case editSeq > 0:
		m.Body, m.EditedTS = body, editedTS
	}
	m.Reactions = reactions
	return !(deleted || erased || editSeq > 0), nil
}

// reactions reads the reactions of the stored form t2 as a read shows
// them: the groups up to the removed ones, as stored; nil for none. A
// few (as most messages carry) take one allocation (shownReactions),
// more three.
func (d *stateDecoder) reactions() *[]protocol.Reaction {
	if !d.skip(';') {
		return nil
	}
	// The counts size the allocations; they are not trusted further.
	entries := d.int(',')
	users := d.num()
	if d.err != nil || entries <= 0 || users <= 0 {
		return nil
	}
	var list *[]protocol.Reaction
	var all []string
	if entries <= int64(len(shownReactions{}.entries)) && users <= int64(len(shownReactions{}.users)) {
		box := new(shownReactions)
		list, box.list, all = &box.list, box.entries[:0], box.users[:0]
	} else {
		n := int64(len(d.s))
		list = new([]protocol.Reaction)
		*list, all = make([]protocol.Reaction, 0, min(entries, n)), make([]string, 0, min(users, n))
	}
	for d.err == nil && d.at < len(d.s) {
		d.expect(';')
		body := d.str()
		if body == "" {
			break // the removed ones, not shown
		}
		first := len(all)
		for d.skip(',') {
			all = append(all, d.str())
			d.expect(',')
			d.skipNum()
		}
		if len(all) == first {
			d.expect(',') // a group holds at least one user
		}
		*list = append(*list, protocol.Reaction{Body: body, Users: all[first:len(all):len(all)]})
	}
	return list
}

// shownReactions is the reactions a read shows, when there are few, in
// one allocation: the list (what Message.Reactions points at), its
// entries and their users.
type shownReactions struct {
	list    []protocol.Reaction
	entries [3]protocol.Reaction
	users   [6]string
}

// standingReaction reads one reaction of the stored form t1.
func (d *stateDecoder) standingReaction() StandingReaction {
	d.expect(';')
	var r StandingReaction
	r.User = d.str()
	d.expect(',')
	r.Seq = d.int(',')
	r.Body = d.str()
	return r
}

// aggregateV1 reads the reactions of the stored form t1, stored by user,
// and aggregates them.
func (d *stateDecoder) aggregateV1() []protocol.Reaction {
	// The standing reactions, by seq: few, so kept on the stack and
	// sorted by insertion.
	var buf [16]StandingReaction
	standing := buf[:0]
	for d.err == nil && d.at < len(d.s) {
		r := d.standingReaction()
		if r.Body == "" {
			continue
		}
		i := len(standing)
		standing = append(standing, r)
		for ; i > 0 && standing[i-1].Seq > r.Seq; i-- {
			standing[i] = standing[i-1]
		}
		standing[i] = r
	}
	return aggregate(standing)
}

// aggregate groups standing reactions, in seq order, by body: one entry
// per body in the order of its first reaction, users in order; nil for
// none. The users of every entry share one backing array.
func aggregate(standing []StandingReaction) []protocol.Reaction {
	if len(standing) == 0 {
		return nil
	}
	var out []protocol.Reaction
	counts := make([]int, 0, 4)
	for _, r := range standing {
		j := slices.IndexFunc(out, func(x protocol.Reaction) bool { return x.Body == r.Body })
		if j < 0 {
			out = append(out, protocol.Reaction{Body: r.Body})
			counts = append(counts, 0)
			j = len(out) - 1
		}
		counts[j]++
	}
	users := make([]string, len(standing))
	at := 0
	for j := range out {
		out[j].Users = users[at : at : at+counts[j]]
		at += counts[j]
	}
	for _, r := range standing {
		j := slices.IndexFunc(out, func(x protocol.Reaction) bool { return x.Body == r.Body })
		out[j].Users = append(out[j].Users, r.User)
	}
	return out
}
