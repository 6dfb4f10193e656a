package tui

import (
	"errors"
	"strings"

	"github.com/imcore/im/session"
)

// folderRule says what a folder (category) name may hold: the server's
// rule, told before the name is sent rather than after it is refused.
const folderRule = "A folder name is 1-32 characters of a-z 0-9 _ . - (no spaces or capitals), starting with a letter or digit"

// checkFolder refuses a folder name the server would refuse, suggesting
// one it takes when there is one.
func checkFolder(name string) error {
	if session.Validate(session.OpSetCategory, session.OpArgs{Category: name}) == nil {
		return nil
	}
	msg := "1-32 of a-z 0-9 _ . -"
	if s := folderSuggestion(name); s != "" {
		msg += `: try "` + s + `"`
	}
	return errors.New(msg)
}

// folderSuggestion is name made a folder name: lower case, spaces as -,
// other characters dropped; "" when nothing is left.
func folderSuggestion(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(name)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-_.")
	if len(s) > session.MaxCategoryLen {
		s = s[:session.MaxCategoryLen]
	}
	if session.Validate(session.OpSetCategory, session.OpArgs{Category: s}) != nil {
		return ""
	}
	return s
}
