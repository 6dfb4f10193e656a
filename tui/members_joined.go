package tui

import (
	"slices"
	"strings"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// addedUsers returns the users the system messages among msgs say were
// added to the group. The server writes "<actor> added <names>", the names
// as "bob", "bob and carol" or "bob, carol and dave"; a long list ends in
// "… and N others", whose members it does not name.
func addedUsers(msgs []client.Message) map[string]bool {
	added := map[string]bool{}
	for i := range msgs {
		m := &msgs[i]
		if m.Kind != protocol.KindSystem {
			continue
		}
		actor, names, ok := strings.Cut(m.Body, " added ")
		if !ok || actor == "" || strings.ContainsAny(actor, " \"") {
			continue
		}
		for _, part := range strings.Split(names, ", ") {
			for _, u := range strings.Split(part, " and ") {
				if u != "" && u != "…" && !strings.Contains(u, " ") {
					added[u] = true
				}
			}
		}
	}
	return added
}

// withoutUsers returns the receipts of members not in drop.
func withoutUsers(members []protocol.MemberReceipt, drop map[string]bool) []protocol.MemberReceipt {
	if len(drop) == 0 {
		return members
	}
	return slices.DeleteFunc(slices.Clone(members), func(r protocol.MemberReceipt) bool { return drop[r.User] })
}
