package protocol

import "strings"

// ConvKind says what a conversation id names.
type ConvKind int

// The kinds of conversation id.
const (
	ConvDirect ConvKind = iota + 1 // d:<a>:<b>, a < b
	ConvGroup                      // g:<id>
	ConvBiz                        // biz:<name>, a sub-business gateway session
)

// String returns the kind's name as used in session objects.
func (k ConvKind) String() string {
	switch k {
	case ConvDirect:
		return "direct"
	case ConvGroup:
		return "group"
	case ConvBiz:
		return "biz"
	}
	return "unknown"
}

// Conv is a parsed conversation id.
type Conv struct {
	Kind ConvKind
	// A and B are the two users of a direct chat, A < B in byte order.
	A, B string
	// Name is the group id or the sub-business name.
	Name string
}

// MaxGroupIDLen bounds the id part of a group conversation id.
const MaxGroupIDLen = 64

// ParseConv parses and validates a conversation id.
func ParseConv(s string) (Conv, bool) {
	switch {
	case strings.HasPrefix(s, "d:"):
		a, b, ok := strings.Cut(s[2:], ":")
		if !ok || !ValidUser(a) || !ValidUser(b) || a >= b {
			return Conv{}, false
		}
		return Conv{Kind: ConvDirect, A: a, B: b}, true
	case strings.HasPrefix(s, "g:"):
		if !validToken(s[2:], MaxGroupIDLen) {
			return Conv{}, false
		}
		return Conv{Kind: ConvGroup, Name: s[2:]}, true
	case strings.HasPrefix(s, gatewayPrefix):
		name := s[len(gatewayPrefix):]
		if !ValidUser(name) {
			return Conv{}, false
		}
		return Conv{Kind: ConvBiz, Name: name}, true
	}
	return Conv{}, false
}

// DirectConv returns the id of the direct chat between users a and b, in
// canonical order. ok is false when either id is invalid or a == b.
func DirectConv(a, b string) (conv string, ok bool) {
	if !ValidUser(a) || !ValidUser(b) || a == b {
		return "", false
	}
	if a > b {
		a, b = b, a
	}
	return "d:" + a + ":" + b, true
}

// GroupConv returns the conversation id of group id.
func GroupConv(id string) string { return "g:" + id }

// gatewayPrefix starts the id of a sub-business gateway session.
const gatewayPrefix = "biz:"

// GatewayConv returns the id of the gateway session that stands in the main
// list for the nested list of sub-business name.
func GatewayConv(name string) string { return gatewayPrefix + name }

// IsGateway reports whether conv names a sub-business gateway session
// (biz:<name>), and returns the sub-business's name.
func IsGateway(conv string) (name string, ok bool) {
	return strings.CutPrefix(conv, gatewayPrefix)
}

// String returns the conversation id in its wire form.
func (c Conv) String() string {
	switch c.Kind {
	case ConvDirect:
		return "d:" + c.A + ":" + c.B
	case ConvGroup:
		return "g:" + c.Name
	case ConvBiz:
		return GatewayConv(c.Name)
	}
	return ""
}

// HasMember reports whether user is one of the two users of a direct chat.
// It is false for every other kind: their membership lives in the store.
func (c Conv) HasMember(user string) bool {
	return c.Kind == ConvDirect && (user == c.A || user == c.B)
}

// Peer returns the other user of a direct chat seen from user.
func (c Conv) Peer(user string) string {
	if user == c.A {
		return c.B
	}
	return c.A
}
