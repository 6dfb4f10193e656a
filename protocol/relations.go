package protocol

import (
	"unicode"
	"unicode/utf8"
)

// MaxReactionLen is the longest reaction, in bytes.
const MaxReactionLen = 32

// CheckReaction validates a reaction's body: 1–32 bytes of valid UTF-8
// without whitespace or control characters, or empty, which removes the
// user's reaction.
func CheckReaction(body string) *Error {
	if body == "" {
		return nil
	}
	if len(body) > MaxReactionLen {
		return Errorf(CodeInvalid, "a reaction is at most %d bytes, not %d", MaxReactionLen, len(body))
	}
	if !utf8.ValidString(body) {
		return Errorf(CodeInvalid, "a reaction must be valid UTF-8")
	}
	for _, r := range body {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return Errorf(CodeInvalid, "a reaction holds no whitespace or control characters")
		}
	}
	return nil
}

// ValidateRelation checks a send that may be a reply (ReplyTo) or a
// relation entry (Kind and RefSeq), by the rules a frame can be checked
// by alone: a reply's reply_to is a seq; an edit has a ref and a body as
// a send's; a deletion a ref and no body; a reaction a ref and a body that
// passes CheckReaction; a relation entry is no reply; no other kind is
// sent by a client. A plain send passes it exactly when it passes
// Validate. Whether the targets exist, and whose they are, is the
// server's to check.
func (s *Send) ValidateRelation(lim Limits) *Error {
	if s.ReplyTo < 0 || s.RefSeq < 0 {
		return Errorf(CodeInvalid, "reply_to and ref cannot be negative")
	}
	if s.Kind == "" {
		if s.RefSeq != 0 {
			return Errorf(CodeInvalid, "ref needs a kind: edit, delete or reaction")
		}
		return s.Validate(lim)
	}
	if !IsRelationKind(s.Kind) {
		return Errorf(CodeInvalid, "kind %q cannot be sent (want edit, delete or reaction)", truncate(s.Kind, 40))
	}
	if _, err := ParseMessageConv(s.Conv); err != nil {
		return err
	}
	if !ValidMsgID(s.MsgID) {
		return Errorf(CodeInvalid, "msg_id must be 1-64 printable characters")
	}
	if s.RefSeq == 0 {
		return Errorf(CodeInvalid, "%s needs ref, the seq of its target", s.Kind)
	}
	if s.ReplyTo != 0 {
		return Errorf(CodeInvalid, "%s cannot be a reply", s.Kind)
	}
	switch s.Kind {
	case KindEdit:
		return CheckBody(s.Body, lim.MaxBody)
	case KindDelete:
		if s.Body != "" {
			return Errorf(CodeInvalid, "a deletion has no body")
		}
		return nil
	}
	return CheckReaction(s.Body)
}
