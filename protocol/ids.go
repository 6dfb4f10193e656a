package protocol

import (
	"unicode/utf8"
)

// Identifier and size limits fixed by the protocol.
const (
	MaxUserLen   = 32
	MaxDeviceLen = 64
	MaxMsgIDLen  = 64
	MaxKeyLen    = 64
	// DefaultMaxBody is the default limit on a message body, in bytes.
	DefaultMaxBody = 4096
	// DefaultMaxFrame is the default limit on one frame, in bytes.
	DefaultMaxFrame = 64 << 10
	// DefaultHistoryLimit is the page size of a history request without limit.
	DefaultHistoryLimit = 20
	// MaxHistoryLimit is the largest page a history request gets.
	MaxHistoryLimit = 200
	// DefaultMaxGroupSize is the default limit on a group's members.
	DefaultMaxGroupSize = 1024
	// DefaultMaxTitle is the default limit on a group title, in characters.
	DefaultMaxTitle = 100
)

// ValidUser reports whether s is a user id: 1–32 characters of [a-z0-9_.-]
// starting with a letter or digit.
func ValidUser(s string) bool {
	if len(s) == 0 || len(s) > MaxUserLen || !isLowerAlnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isLowerAlnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// ValidDevice reports whether s is a device id: 1–64 characters of
// [A-Za-z0-9_-].
func ValidDevice(s string) bool { return validToken(s, MaxDeviceLen) }

// ValidMsgID reports whether s is a message id: 1–64 characters (not
// bytes) of valid UTF-8 with no control characters.
func ValidMsgID(s string) bool {
	if len(s) == 0 || len(s) > 4*MaxMsgIDLen || !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxMsgIDLen {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// CheckBody validates a message body against maxBytes: not empty, valid
// UTF-8 (code invalid), and at most maxBytes long (code too_large).
func CheckBody(body string, maxBytes int) *Error {
	if len(body) > maxBytes {
		return Errorf(CodeTooLarge, "body is %d bytes, the limit is %d", len(body), maxBytes)
	}
	if body == "" {
		return Errorf(CodeInvalid, "body is empty")
	}
	if !utf8.ValidString(body) {
		return Errorf(CodeInvalid, "body is not valid UTF-8")
	}
	return nil
}

// validToken reports whether s is 1–max characters of [A-Za-z0-9_-].
func validToken(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isLowerAlnum(c) && !(c >= 'A' && c <= 'Z') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') }
