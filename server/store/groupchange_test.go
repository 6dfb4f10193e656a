package store

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// crew is a group at version 2: alice and bob joined at its creation,
// carol at seq 5.
func crew() *GroupRecord {
	return &GroupRecord{Conv: "g:1", Title: "crew", Version: 2, Members: map[string]int64{"alice": 1, "bob": 1, "carol": 5}}
}

func TestApplyGroupChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		cur  *GroupRecord
		ch   GroupChange
		seq  int64
		want GroupRecord
	}{
		{"create starts at version 0 with those it adds, joined at its seq", nil,
			GroupChange{Conv: "g:1", Create: true, Title: "crew", Add: []string{"alice", "bob"}}, 1,
			GroupRecord{Conv: "g:1", Title: "crew", Members: map[string]int64{"alice": 1, "bob": 1}}},
		{"add joins at the seq and moves the version", crew(),
			GroupChange{Conv: "g:1", Version: 2, Add: []string{"dave"}}, 9,
			GroupRecord{Conv: "g:1", Title: "crew", Version: 3, Members: map[string]int64{"alice": 1, "bob": 1, "carol": 5, "dave": 9}}},
		{"remove drops the member and moves the version", crew(),
			GroupChange{Conv: "g:1", Version: 2, Remove: []string{"carol"}}, 9,
			GroupRecord{Conv: "g:1", Title: "crew", Version: 3, Members: map[string]int64{"alice": 1, "bob": 1}}},
		{"leave is the removal of the one who leaves", crew(),
			GroupChange{Conv: "g:1", Version: 2, Remove: []string{"alice"}}, 9,
			GroupRecord{Conv: "g:1", Title: "crew", Version: 3, Members: map[string]int64{"bob": 1, "carol": 5}}},
		{"the last member may leave", &GroupRecord{Conv: "g:1", Version: 4, Members: map[string]int64{"alice": 1}},
			GroupChange{Conv: "g:1", Version: 4, Remove: []string{"alice"}}, 9,
			GroupRecord{Conv: "g:1", Version: 5, Members: map[string]int64{}}},
		{"add and remove together move the version once", crew(),
			GroupChange{Conv: "g:1", Version: 2, Add: []string{"dave", "erin"}, Remove: []string{"bob"}, Title: "core"}, 9,
			GroupRecord{Conv: "g:1", Title: "core", Version: 3, Members: map[string]int64{"alice": 1, "carol": 5, "dave": 9, "erin": 9}}},
		{"rename keeps the members and the version", crew(),
			GroupChange{Conv: "g:1", Version: 2, Title: "core"}, 9,
			GroupRecord{Conv: "g:1", Title: "core", Version: 2, Members: map[string]int64{"alice": 1, "bob": 1, "carol": 5}}},
		{"an empty title keeps the title", crew(),
			GroupChange{Conv: "g:1", Version: 2, Add: []string{"dave"}}, 9,
			GroupRecord{Conv: "g:1", Title: "crew", Version: 3, Members: map[string]int64{"alice": 1, "bob": 1, "carol": 5, "dave": 9}}},
		{"a member added back joins at the new seq", &GroupRecord{Conv: "g:1", Version: 3, Members: map[string]int64{"alice": 1}},
			GroupChange{Conv: "g:1", Version: 3, Add: []string{"carol"}}, 12,
			GroupRecord{Conv: "g:1", Version: 4, Members: map[string]int64{"alice": 1, "carol": 12}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before GroupRecord
			if tc.cur != nil {
				before = *tc.cur
				before.Members = maps.Clone(tc.cur.Members)
			}
			got, err := ApplyGroupChange(tc.cur, tc.ch, tc.seq)
			if err != nil {
				t.Fatalf("ApplyGroupChange: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ApplyGroupChange = %+v, want %+v", got, tc.want)
			}
			if tc.cur != nil && !reflect.DeepEqual(*tc.cur, before) {
				t.Errorf("ApplyGroupChange changed the current group: %+v, was %+v", *tc.cur, before)
			}
		})
	}
}

func TestApplyGroupChangeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cur  *GroupRecord
		ch   GroupChange
		is   error // nil: any error
	}{
		{"a change of no group", nil, GroupChange{Conv: "g:1", Add: []string{"dave"}}, ErrNotFound},
		{"a rename of no group", nil, GroupChange{Conv: "g:1", Title: "x"}, ErrNotFound},
		{"a stale version", crew(), GroupChange{Conv: "g:1", Version: 1, Add: []string{"dave"}}, ErrStaleMembers},
		{"a rename at a stale version", crew(), GroupChange{Conv: "g:1", Version: 3, Title: "x"}, ErrStaleMembers},
		{"a create of a group that exists", crew(), GroupChange{Conv: "g:1", Create: true, Add: []string{"alice"}}, nil},
		{"a create that removes", nil, GroupChange{Conv: "g:1", Create: true, Add: []string{"alice"}, Remove: []string{"bob"}}, nil},
		{"adding a member", crew(), GroupChange{Conv: "g:1", Version: 2, Add: []string{"dave", "bob"}}, nil},
		{"removing a non-member", crew(), GroupChange{Conv: "g:1", Version: 2, Remove: []string{"dave"}}, nil},
		{"adding a user twice", crew(), GroupChange{Conv: "g:1", Version: 2, Add: []string{"dave", "dave"}}, nil},
		{"removing a member twice", crew(), GroupChange{Conv: "g:1", Version: 2, Remove: []string{"bob", "bob"}}, nil},
		{"adding and removing one user", crew(), GroupChange{Conv: "g:1", Version: 2, Add: []string{"bob"}, Remove: []string{"bob"}}, nil},
		{"a create naming a user twice", nil, GroupChange{Conv: "g:1", Create: true, Add: []string{"alice", "alice"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ApplyGroupChange(tc.cur, tc.ch, 9)
			if err == nil {
				t.Fatal("ApplyGroupChange accepted it")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
			if check := CheckGroupChange(tc.cur, tc.ch); check == nil || check.Error() != err.Error() {
				t.Errorf("CheckGroupChange = %v, want ApplyGroupChange's %v", check, err)
			}
		})
	}
}

func TestChangesMembers(t *testing.T) {
	for _, tc := range []struct {
		ch   GroupChange
		want bool
	}{
		{GroupChange{Create: true, Add: []string{"alice"}}, false},
		{GroupChange{Title: "crew"}, false},
		{GroupChange{Add: []string{"dave"}}, true},
		{GroupChange{Remove: []string{"bob"}}, true},
	} {
		if got := tc.ch.ChangesMembers(); got != tc.want {
			t.Errorf("ChangesMembers(%+v) = %v, want %v", tc.ch, got, tc.want)
		}
	}
}

func TestMemberChanges(t *testing.T) {
	for _, tc := range []struct {
		name         string
		cur          *GroupRecord
		next         GroupRecord
		joined, left []string
	}{
		{"a new group: everyone joins", nil,
			GroupRecord{Members: map[string]int64{"bob": 1, "alice": 1}}, []string{"alice", "bob"}, nil},
		{"adds and removes", crew(),
			GroupRecord{Members: map[string]int64{"alice": 1, "carol": 5, "erin": 9, "dave": 9}}, []string{"dave", "erin"}, []string{"bob"}},
		{"a rename: nothing", crew(), *crew(), nil, nil},
		{"a member joined again at another seq", crew(),
			GroupRecord{Members: map[string]int64{"alice": 1, "bob": 1, "carol": 9}}, []string{"carol"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			joined, left := MemberChanges(tc.cur, tc.next)
			if !slices.Equal(joined, tc.joined) || !slices.Equal(left, tc.left) {
				t.Errorf("MemberChanges = %v, %v; want %v, %v", joined, left, tc.joined, tc.left)
			}
		})
	}
}

func TestGroupRecordState(t *testing.T) {
	got := crew().State()
	want := GroupState{Conv: "g:1", Title: "crew", Version: 2, Members: []string{"alice", "bob", "carol"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("State = %+v, want %+v", got, want)
	}
	if empty := (GroupRecord{Conv: "g:1"}).State(); empty.Members == nil || len(empty.Members) != 0 {
		t.Errorf("State of a group with no members lists %#v, want an empty list", empty.Members)
	}
}
