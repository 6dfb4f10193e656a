package store

import (
	"fmt"
	"maps"
	"slices"
)

// The rules of a group change, written once for the engine and every
// backend that records one: a backend reads the group as it holds it,
// asks ApplyGroupChange for the group that results, and stores that.

// GroupRecord is a group as a backend records it: what a change is checked
// against and what it results in.
type GroupRecord struct {
	Conv  string
	Title string
	// Version counts membership changes (see GroupState).
	Version int64
	// Members maps each member to the seq of the system message that
	// announced its (latest) joining.
	Members map[string]int64
}

// State is the group as the domain sees it: its members sorted.
func (g GroupRecord) State() GroupState {
	members := slices.Sorted(maps.Keys(g.Members))
	if members == nil {
		members = []string{}
	}
	return GroupState{Conv: g.Conv, Title: g.Title, Version: g.Version, Members: members}
}

// ApplyGroupChange returns the group that results from ch, recorded with
// its system message at seq, on cur: the group as stored, nil when there is
// none. Those ch removes go; those it adds join at seq; a non-empty title
// replaces the group's; the membership version moves when members do (see
// ChangesMembers). A create starts a group at version 0 with the users it
// adds, all joined at seq. It fails, and cur is left as it was, when
// CheckGroupChange refuses ch.
func ApplyGroupChange(cur *GroupRecord, ch GroupChange, seq int64) (GroupRecord, error) {
	if err := CheckGroupChange(cur, ch); err != nil {
		return GroupRecord{}, err
	}
	next := GroupRecord{Conv: ch.Conv, Members: map[string]int64{}}
	if cur != nil {
		next.Title, next.Version, next.Members = cur.Title, cur.Version, maps.Clone(cur.Members)
	}
	for _, u := range ch.Remove {
		delete(next.Members, u)
	}
	for _, u := range ch.Add {
		next.Members[u] = seq
	}
	if ch.Title != "" {
		next.Title = ch.Title
	}
	if ch.ChangesMembers() {
		next.Version++
	}
	return next, nil
}

// CheckGroupChange reports whether ch applies to cur (nil when there is no
// group), as ApplyGroupChange does: a change needs a group (ErrNotFound)
// at the membership version it was computed from (ErrStaleMembers), whose
// members include each user it removes and none it adds; a create needs
// no group and removes no one; a change names each user once. A backend
// whose seq is not known before the change is found valid checks first.
func CheckGroupChange(cur *GroupRecord, ch GroupChange) error {
	switch {
	case ch.Create && cur != nil:
		return fmt.Errorf("create %s: the group exists", ch.Conv)
	case ch.Create && len(ch.Remove) > 0:
		return fmt.Errorf("create %s: a new group has no one to remove", ch.Conv)
	case !ch.Create && cur == nil:
		return ErrNotFound
	case !ch.Create && cur.Version != ch.Version:
		return ErrStaleMembers
	}
	named := make(map[string]bool, len(ch.Add)+len(ch.Remove))
	for _, u := range slices.Concat(ch.Add, ch.Remove) {
		if named[u] {
			return fmt.Errorf("change %s: %s named twice", ch.Conv, u)
		}
		named[u] = true
	}
	if cur == nil {
		return nil
	}
	for _, u := range ch.Remove {
		if _, ok := cur.Members[u]; !ok {
			return fmt.Errorf("remove %s from %s: not a member", u, ch.Conv)
		}
	}
	for _, u := range ch.Add {
		if _, ok := cur.Members[u]; ok {
			return fmt.Errorf("add %s to %s: already a member", u, ch.Conv)
		}
	}
	return nil
}

// ChangesMembers reports whether the change moves the group's membership
// version: it adds or removes members of an existing group (a group is
// created at version 0, whoever it starts with).
func (c GroupChange) ChangesMembers() bool {
	return !c.Create && len(c.Add)+len(c.Remove) > 0
}

// MemberChanges returns what a backend writes to turn cur (nil when there
// is none) into next, each list sorted: the users who join next, each at
// next.Members[user], and the members of cur who are not in next.
func MemberChanges(cur *GroupRecord, next GroupRecord) (joined, left []string) {
	var before map[string]int64
	if cur != nil {
		before = cur.Members
	}
	for _, u := range slices.Sorted(maps.Keys(next.Members)) {
		if seq, ok := before[u]; !ok || seq != next.Members[u] {
			joined = append(joined, u)
		}
	}
	for _, u := range slices.Sorted(maps.Keys(before)) {
		if _, ok := next.Members[u]; !ok {
			left = append(left, u)
		}
	}
	return joined, left
}
