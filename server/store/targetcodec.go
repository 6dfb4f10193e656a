package store

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/imcore/im/protocol"
)

// A TargetState is stored as text every backend keeps in one column or
// attribute, read with every row of a history page: a compact form that
// decodes without reflection (a page of edited, reacted-to messages then
// costs about what a plain one does). Fields are separated by ';', lists
// by ','; strings, which may hold anything, are length-prefixed:
//
//	t1;EDIT_SEQ;EDITED_TS;FLAGS;EDIT,EDIT,…;LEN:BODY;LEN:USER,SEQ,LEN:BODY;…
//
// FLAGS is 1 for Deleted plus 2 for Erased; each reaction is one field.

// stateMagic starts every stored state: the form's version.
const stateMagic = "t1;"

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
	for _, r := range t.Reactions {
		b.WriteByte(';')
		writeString(&b, r.User)
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(r.Seq, 10))
		b.WriteByte(',')
		writeString(&b, r.Body)
	}
	return b.String(), nil
}

// writeString writes s length-prefixed.
func writeString(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}

// DecodeTargetState reads a stored state; "" is nil (no relation ever
// touched the message).
func DecodeTargetState(s string) (*TargetState, error) {
	if s == "" {
		return nil, nil
	}
	if !strings.HasPrefix(s, stateMagic) {
		return nil, errors.New("a message's relation state: not a stored state")
	}
	d := stateDecoder{s: s, at: len(stateMagic)}
	var t TargetState
	t.EditSeq = d.int(';')
	t.EditedTS = d.int(';')
	flags := d.int(';')
	t.Deleted, t.Erased = flags&1 != 0, flags&2 != 0
	if !d.skip(';') {
		for {
			t.Edits = append(t.Edits, d.num())
			if d.err != nil || d.skip(';') {
				break
			}
			d.expect(',')
		}
	}
	t.Body = d.str()
	for d.err == nil && d.at < len(d.s) {
		d.expect(';')
		var r StandingReaction
		r.User = d.str()
		d.expect(',')
		r.Seq = d.int(',')
		r.Body = d.str()
		t.Reactions = append(t.Reactions, r)
	}
	if d.err != nil {
		return nil, fmt.Errorf("a message's relation state at byte %d: %w", d.at, d.err)
	}
	return &t, nil
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

// num reads a decimal number, '-' signed.
func (d *stateDecoder) num() int64 {
	if d.err != nil {
		return 0
	}
	neg := d.skip('-')
	start := d.at
	var n int64
	for d.at < len(d.s) && d.s[d.at] >= '0' && d.s[d.at] <= '9' {
		if n > (1<<63-1)/10 {
			d.err = errState
			return 0
		}
		n = n*10 + int64(d.s[d.at]-'0')
		d.at++
	}
	if d.at == start || n < 0 {
		d.err = errState
		return 0
	}
	if neg {
		return -n
	}
	return n
}

// str reads a length-prefixed string.
func (d *stateDecoder) str() string {
	n := int(d.num())
	d.expect(':')
	if d.err != nil || n < 0 || n > len(d.s)-d.at {
		if d.err == nil {
			d.err = errState
		}
		return ""
	}
	v := d.s[d.at : d.at+n]
	d.at += n
	return v
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
	if !strings.HasPrefix(state, stateMagic) {
		return false, errors.New("a message's relation state: not a stored state")
	}
	d := stateDecoder{s: state, at: len(stateMagic)}
	editSeq := d.int(';')
	editedTS := d.int(';')
	flags := d.int(';')
	if !d.skip(';') {
		for {
			d.num()
			if d.err != nil || d.skip(';') {
				break
			}
			d.expect(',')
		}
	}
	body := d.str()
	// The standing reactions, by seq: few, so kept on the stack and
	// sorted by insertion.
	var buf [16]StandingReaction
	standing := buf[:0]
	for d.err == nil && d.at < len(d.s) {
		d.expect(';')
		var r StandingReaction
		r.User = d.str()
		d.expect(',')
		r.Seq = d.int(',')
		r.Body = d.str()
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
	m.SetReactions(aggregate(standing))
	return !(deleted || erased || editSeq > 0), nil
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
