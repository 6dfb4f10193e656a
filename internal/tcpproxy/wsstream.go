package tcpproxy

import "encoding/binary"

// maxTapMessage bounds a text message the stream assembles for its tap; a
// longer one (never a sent answer) is followed but not collected.
const maxTapMessage = 1 << 20

// wsStream follows one direction of a proxied WebSocket connection byte by
// byte: first the HTTP upgrade (request or response, up to its blank
// line), then RFC 6455 frames. At any point it can say whether the bytes
// fed so far end inside the upgrade or inside a frame, which is how the
// proxy knows that a cut left the other side with a partial frame. With
// onText set it also reassembles text messages (fragmented ones included,
// control frames interleaved) and hands each complete one to onText.
//
// A wsStream is used by one goroutine at a time.
type wsStream struct {
	onText func(payload []byte)

	started   bool   // a byte has been fed
	upgraded  bool   // the HTTP part is over: frames follow
	last4     uint32 // the last four bytes of the HTTP part, to spot "\r\n\r\n"
	hdr       [14]byte
	hdrLen    int    // header bytes of the current frame read so far
	hdrNeed   int    // header bytes the current frame has (known after two)
	remaining uint64 // payload bytes of the current frame still to come
	opcode    byte
	fin       bool
	masked    bool
	mask      [4]byte
	maskPos   int

	collecting bool   // the current frame's payload belongs to msg
	inMessage  bool   // a fragmented text message is in progress
	msg        []byte // the text message being assembled
	tooLong    bool   // msg outgrew maxTapMessage: dropped

	frames   int64 // complete frames seen
	messages int64 // complete text messages seen
}

// Frame opcodes (RFC 6455 section 5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
)

// inHandshake reports whether the bytes fed so far end inside the HTTP
// upgrade (at least one byte of it fed, its blank line not yet).
func (s *wsStream) inHandshake() bool { return s.started && !s.upgraded }

// midFrame reports whether the bytes fed so far end inside a WebSocket
// frame: some of its header or payload fed, not all.
func (s *wsStream) midFrame() bool {
	return s.upgraded && (s.hdrLen > 0 || s.remaining > 0)
}

// upgradeBytes returns how many bytes at the start of p, fed next, would
// belong to the HTTP upgrade (all of p while its blank line is still to
// come, none once it is over), without feeding them.
func (s *wsStream) upgradeBytes(p []byte) int {
	if s.upgraded {
		return 0
	}
	last4 := s.last4
	for i, b := range p {
		last4 = last4<<8 | uint32(b)
		if last4 == 0x0d0a0d0a {
			return i + 1
		}
	}
	return len(p)
}

// feed follows p, the next bytes of the stream.
func (s *wsStream) feed(p []byte) {
	if len(p) > 0 {
		s.started = true
	}
	for len(p) > 0 {
		switch {
		case !s.upgraded:
			p = s.feedHTTP(p)
		case s.remaining > 0:
			p = s.feedPayload(p)
		default:
			p = s.feedHeader(p)
		}
	}
}

// feedHTTP consumes the upgrade up to and including its blank line.
func (s *wsStream) feedHTTP(p []byte) []byte {
	for i, b := range p {
		s.last4 = s.last4<<8 | uint32(b)
		if s.last4 == 0x0d0a0d0a { // "\r\n\r\n"
			s.upgraded = true
			s.hdrNeed = 2
			return p[i+1:]
		}
	}
	return nil
}

// feedHeader consumes header bytes of the next frame.
func (s *wsStream) feedHeader(p []byte) []byte {
	for len(p) > 0 && s.hdrLen < s.hdrNeed {
		s.hdr[s.hdrLen] = p[0]
		s.hdrLen++
		p = p[1:]
		if s.hdrLen == 2 {
			s.hdrNeed = 2
			switch s.hdr[1] & 0x7f {
			case 126:
				s.hdrNeed += 2
			case 127:
				s.hdrNeed += 8
			}
			if s.hdr[1]&0x80 != 0 {
				s.hdrNeed += 4
			}
		}
	}
	if s.hdrLen < s.hdrNeed {
		return p
	}
	s.fin = s.hdr[0]&0x80 != 0
	s.opcode = s.hdr[0] & 0x0f
	s.masked = s.hdr[1]&0x80 != 0
	n := uint64(s.hdr[1] & 0x7f)
	at := 2
	switch n {
	case 126:
		n = uint64(binary.BigEndian.Uint16(s.hdr[2:4]))
		at = 4
	case 127:
		n = binary.BigEndian.Uint64(s.hdr[2:10])
		at = 10
	}
	if s.masked {
		copy(s.mask[:], s.hdr[at:at+4])
	}
	s.maskPos = 0
	s.hdrLen, s.hdrNeed = 0, 2
	s.remaining = n
	s.collecting = s.onText != nil && (s.opcode == opText || (s.opcode == opContinuation && s.inMessage))
	if s.opcode == opText {
		s.msg, s.tooLong = s.msg[:0], false
	}
	if n == 0 {
		s.frameDone()
	}
	return p
}

// feedPayload consumes payload bytes of the current frame.
func (s *wsStream) feedPayload(p []byte) []byte {
	n := uint64(len(p))
	if n > s.remaining {
		n = s.remaining
	}
	chunk := p[:n]
	if s.collecting && !s.tooLong {
		if len(s.msg)+len(chunk) > maxTapMessage {
			s.tooLong = true
		} else {
			start := len(s.msg)
			s.msg = append(s.msg, chunk...)
			if s.masked {
				for i := start; i < len(s.msg); i++ {
					s.msg[i] ^= s.mask[s.maskPos&3]
					s.maskPos++
				}
			}
		}
	}
	s.remaining -= n
	if s.remaining == 0 {
		s.frameDone()
	}
	return p[n:]
}

// frameDone ends the current frame; a final text frame (or the final
// continuation of a text message) completes a message.
func (s *wsStream) frameDone() {
	s.frames++
	switch s.opcode {
	case opText:
		s.inMessage = !s.fin
	case opContinuation:
		if !s.inMessage {
			return
		}
		s.inMessage = !s.fin
	default:
		return // control frames may come between fragments
	}
	if s.fin {
		s.messages++
		if s.onText != nil && !s.tooLong {
			s.onText(s.msg)
		}
	}
}
