package protocol

import (
	"strconv"
	"unicode/utf8"
)

// The history answer (Messages) and the message push (MsgPush) are the
// frames the server sends most and the largest, so Encode writes them by
// hand instead of through encoding/json's reflection, to the same bytes
// (TestAppendJSONMatchesMarshal holds the two together): a page then
// costs what its text does, whatever its messages carry.

// appender is a frame that writes its own JSON text, "type" first, as
// Encode's encoding/json path would. sizeHint is about the text's length
// (exact for text that needs no escaping), so that Encode allocates once.
type appender interface {
	appendJSON(dst []byte) []byte
	sizeHint() int
}

func (f *Messages) sizeHint() int {
	n := 64 + len(f.ID) + len(f.Conv)
	for i := range f.Messages {
		n += f.Messages[i].sizeHint() + 1
	}
	return n
}

func (f *MsgPush) sizeHint() int { return 32 + f.Msg.sizeHint() }

// sizeHint is about m's encoded length: its strings unescaped, its
// numbers and the names of its optional fields at their longest.
func (m *Message) sizeHint() int {
	n := 200 + len(m.Conv) + len(m.MsgID) + len(m.From) + len(m.Body) + len(m.Kind)
	if m.Reactions != nil {
		n += 16
		for _, r := range *m.Reactions {
			n += 24 + len(r.Body)
			for _, u := range r.Users {
				n += 3 + len(u)
			}
		}
	}
	return n
}

func (f *Messages) appendJSON(dst []byte) []byte {
	dst = appendFrameStart(dst, f.FrameType(), f.ID)
	dst = append(dst, `,"conv":`...)
	dst = appendString(dst, f.Conv)
	dst = append(dst, `,"messages":`...)
	if f.Messages == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range f.Messages {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = f.Messages[i].appendJSON(dst)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"has_more":`...)
	dst = strconv.AppendBool(dst, f.HasMore)
	return append(dst, '}')
}

func (f *MsgPush) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, f.FrameType()...)
	dst = append(dst, `","msg":`...)
	dst = f.Msg.appendJSON(dst)
	return append(dst, '}')
}

// appendFrameStart writes the start of a frame object: its type and,
// when set, its request id.
func appendFrameStart(dst []byte, typ, id string) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, '"')
	if id != "" {
		dst = append(dst, `,"id":`...)
		dst = appendString(dst, id)
	}
	return dst
}

// appendJSON writes m as encoding/json does (see EncodedLen).
func (m *Message) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"conv":`...)
	dst = appendString(dst, m.Conv)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, m.Seq, 10)
	dst = append(dst, `,"msg_id":`...)
	dst = appendString(dst, m.MsgID)
	dst = append(dst, `,"from":`...)
	dst = appendString(dst, m.From)
	dst = append(dst, `,"body":`...)
	dst = appendString(dst, m.Body)
	dst = append(dst, `,"client_ts":`...)
	dst = strconv.AppendInt(dst, m.ClientTS, 10)
	dst = append(dst, `,"server_ts":`...)
	dst = strconv.AppendInt(dst, m.ServerTS, 10)
	if m.Kind != "" {
		dst = append(dst, `,"kind":`...)
		dst = appendString(dst, m.Kind)
	}
	if m.ReplyTo != 0 {
		dst = append(dst, `,"reply_to":`...)
		dst = strconv.AppendInt(dst, m.ReplyTo, 10)
	}
	if m.RefSeq != 0 {
		dst = append(dst, `,"ref":`...)
		dst = strconv.AppendInt(dst, m.RefSeq, 10)
	}
	if m.EditedTS != 0 {
		dst = append(dst, `,"edited_ts":`...)
		dst = strconv.AppendInt(dst, m.EditedTS, 10)
	}
	if m.Deleted {
		dst = append(dst, `,"deleted":true`...)
	}
	if m.Reactions != nil {
		dst = append(dst, `,"reactions":`...)
		if *m.Reactions == nil {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, '[')
			for i, r := range *m.Reactions {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"body":`...)
				dst = appendString(dst, r.Body)
				dst = append(dst, `,"users":`...)
				dst = appendStrings(dst, r.Users)
				dst = append(dst, '}')
			}
			dst = append(dst, ']')
		}
	}
	return append(dst, '}')
}

// appendStrings writes a list of strings, null for nil.
func appendStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// jsonSafe marks the ASCII bytes encoding/json writes as they are: not
// a control character, quote or backslash, nor the HTML-sensitive <, >
// and &.
var jsonSafe = func() (safe [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		safe[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return safe
}()

// appendString writes s as a JSON string escaped as encoding/json escapes
// it (see JSONStringLen): the HTML-sensitive characters and the line
// separators as \uXXXX, invalid UTF-8 as \ufffd.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
