package protocol

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// The operations of group_op.
const (
	GroupAdd    = "add"
	GroupRemove = "remove"
	GroupLeave  = "leave"
	GroupRename = "rename"
)

// Validate checks a create_group against lim: a valid title, valid member
// ids, a key of 1–64 characters when present, and room for every member
// (the creator counts, whether listed or not).
func (g *CreateGroup) Validate(creator string, lim Limits) *Error {
	if perr := CheckTitle(g.Title, lim.MaxTitle); perr != nil {
		return perr
	}
	if g.Key != "" && !ValidMsgID(g.Key) {
		return Errorf(CodeInvalid, "key must be 1-64 printable characters")
	}
	if perr := checkUsers(g.Members); perr != nil {
		return perr
	}
	if n := len(GroupMembers(creator, g.Members)); n > lim.MaxGroupSize {
		return Errorf(CodeInvalid, "a group holds at most %d members; this one would have %d", lim.MaxGroupSize, n)
	}
	return nil
}

// GroupMembers returns the members of a new group: the creator and the
// listed users, sorted, each once.
func GroupMembers(creator string, listed []string) []string {
	out := make([]string, 0, len(listed)+1)
	out = append(out, creator)
	out = append(out, listed...)
	return SortedUnique(out)
}

// Validate checks a group_op's shape: a group conversation, a known op, the
// users add and remove need (none for leave), and the title rename needs.
// Whether the change fits the group is the server's business.
func (g *GroupOp) Validate(lim Limits) *Error {
	c, ok := ParseConv(g.Conv)
	if !ok || c.Kind != ConvGroup {
		return Errorf(CodeInvalid, "%q is not a group conversation id (g:<id>)", truncate(g.Conv, 80))
	}
	switch g.Op {
	case GroupAdd, GroupRemove:
		if len(g.Users) == 0 {
			return Errorf(CodeInvalid, "%s needs users", g.Op)
		}
		return checkUsers(g.Users)
	case GroupLeave:
		if len(g.Users) > 0 || g.Title != "" {
			return Errorf(CodeInvalid, "leave takes neither users nor title")
		}
		return nil
	case GroupRename:
		return CheckTitle(g.Title, lim.MaxTitle)
	}
	return Errorf(CodeInvalid, "unknown group op %q (add, remove, leave or rename)", truncate(g.Op, 40))
}

// CheckTitle validates a group title: 1–maxChars characters of valid UTF-8
// with something visible in it, and no control characters, line or
// paragraph separators, or bidirectional overrides (which would reorder
// the text around the title wherever it is shown).
func CheckTitle(title string, maxChars int) *Error {
	if !utf8.ValidString(title) {
		return Errorf(CodeInvalid, "title is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(title); n > maxChars {
		return Errorf(CodeInvalid, "title is %d characters, the limit is %d", n, maxChars)
	}
	visible := false
	for _, r := range title {
		switch {
		case unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp):
			return Errorf(CodeInvalid, "title cannot hold control characters or line breaks")
		case isBidiControl(r):
			return Errorf(CodeInvalid, "title cannot hold bidirectional text controls")
		case !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r):
			visible = true
		}
	}
	if !visible {
		return Errorf(CodeInvalid, "title is empty")
	}
	return nil
}

// isBidiControl reports the embedding, override and isolate controls
// (U+202A–U+202E, U+2066–U+2069).
func isBidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069)
}

// checkUsers validates a list of user ids.
func checkUsers(users []string) *Error {
	for _, u := range users {
		if !ValidUser(u) {
			return Errorf(CodeInvalid, "%q is not a user id (1-32 characters of [a-z0-9_.-])", truncate(u, 40))
		}
	}
	return nil
}

// SortedUnique returns users sorted in byte order, each once.
func SortedUnique(users []string) []string {
	out := slices.Clone(users)
	slices.Sort(out)
	return slices.Compact(out)
}
