package tui

import (
	"errors"
	"fmt"
	"strings"

	"github.com/imcore/im/protocol"
)

// parseMembers splits a comma-separated member list, dropping the user and
// duplicates.
func parseMembers(s, me string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
		u := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(f), "@"))
		if u == "" || u == me || seen[u] {
			continue
		}
		if !protocol.ValidUser(u) {
			return nil, fmt.Errorf("%q is not a valid user id", u)
		}
		seen[u] = true
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, errors.New("name at least one other member")
	}
	return out, nil
}
