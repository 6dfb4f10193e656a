package store

import (
	"maps"
	"testing"
)

func TestGroupRecordChangeRules(t *testing.T) {
	members := map[string]int64{"alice": 1, "bob": 1}
	isMember := func(u string) bool { _, ok := members[u]; return ok }

	create := GroupRecordChange{Conv: "g:1", Create: true, Add: []string{"alice", "bob"}}
	if create.ChangesMembers() {
		t.Error("a create moves the membership version; a group starts at 0")
	}
	rename := GroupRecordChange{Conv: "g:1", Title: "crew"}
	if rename.ChangesMembers() {
		t.Error("a rename moves the membership version")
	}
	change := GroupRecordChange{Conv: "g:1", Add: []string{"carol"}, Remove: []string{"bob"}}
	if !change.ChangesMembers() {
		t.Error("adding and removing members leaves the membership version")
	}
	if err := change.Check(isMember); err != nil {
		t.Errorf("Check of a valid change: %v", err)
	}
	for _, bad := range []GroupRecordChange{
		{Conv: "g:1", Add: []string{"alice"}},
		{Conv: "g:1", Remove: []string{"carol"}},
	} {
		if err := bad.Check(isMember); err == nil {
			t.Errorf("Check(%+v) accepted it", bad)
		}
	}
	change.ApplyMembers(members, 7)
	if want := map[string]int64{"alice": 1, "carol": 7}; !maps.Equal(members, want) {
		t.Errorf("members after the change = %v, want %v", members, want)
	}
}
