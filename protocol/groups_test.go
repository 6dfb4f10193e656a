package protocol

import (
	"slices"
	"strings"
	"testing"
)

func TestCreateGroupValidate(t *testing.T) {
	lim := Limits{MaxBody: 10, MaxGroupSize: 3, MaxTitle: 5}
	cases := []struct {
		name string
		g    CreateGroup
		ok   bool
	}{
		{"minimal", CreateGroup{Title: "team"}, true},
		{"creator listed counts once", CreateGroup{Title: "team", Members: []string{"alice", "bob", "carol", "alice"}}, true},
		{"title at the limit in characters", CreateGroup{Title: "ééééé"}, true},
		{"title too long", CreateGroup{Title: "abcdef"}, false},
		{"blank title", CreateGroup{Title: "  "}, false},
		{"empty title", CreateGroup{}, false},
		{"newline in title", CreateGroup{Title: "a\nb"}, false},
		{"invalid UTF-8 title", CreateGroup{Title: "\xff"}, false},
		{"line separator in title", CreateGroup{Title: "a\u2028b"}, false},
		{"only a zero-width space", CreateGroup{Title: "\u200b"}, false},
		{"right-to-left override", CreateGroup{Title: "ab\u202ecd"}, false},
		{"emoji with joiners", CreateGroup{Title: "👨‍👩‍👧"}, true},
		{"bad member", CreateGroup{Title: "t", Members: []string{"Bob"}}, false},
		{"too many members", CreateGroup{Title: "t", Members: []string{"bob", "carol", "dave"}}, false},
		{"key", CreateGroup{Title: "t", Key: "k-1"}, true},
		{"key too long", CreateGroup{Title: "t", Key: strings.Repeat("k", 65)}, false},
	}
	for _, c := range cases {
		err := c.g.Validate("alice", lim)
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate = %v, want ok %v", c.name, err, c.ok)
		}
		if err != nil && err.Code != CodeInvalid {
			t.Errorf("%s: code %s, want invalid", c.name, err.Code)
		}
	}
}

func TestGroupOpValidate(t *testing.T) {
	lim := DefaultLimits
	cases := []struct {
		name string
		g    GroupOp
		ok   bool
	}{
		{"add", GroupOp{Conv: "g:x", Op: GroupAdd, Users: []string{"bob"}}, true},
		{"add nobody", GroupOp{Conv: "g:x", Op: GroupAdd}, false},
		{"remove bad id", GroupOp{Conv: "g:x", Op: GroupRemove, Users: []string{"B!"}}, false},
		{"leave", GroupOp{Conv: "g:x", Op: GroupLeave}, true},
		{"leave with users", GroupOp{Conv: "g:x", Op: GroupLeave, Users: []string{"bob"}}, false},
		{"rename", GroupOp{Conv: "g:x", Op: GroupRename, Title: "core"}, true},
		{"rename to nothing", GroupOp{Conv: "g:x", Op: GroupRename}, false},
		{"unknown op", GroupOp{Conv: "g:x", Op: "promote"}, false},
		{"direct conv", GroupOp{Conv: "d:alice:bob", Op: GroupLeave}, false},
		{"gateway", GroupOp{Conv: "biz:shop", Op: GroupLeave}, false},
	}
	for _, c := range cases {
		if err := c.g.Validate(lim); (err == nil) != c.ok {
			t.Errorf("%s: Validate = %v, want ok %v", c.name, err, c.ok)
		}
	}
}

func TestGroupMembers(t *testing.T) {
	got := GroupMembers("carol", []string{"bob", "alice", "carol", "bob"})
	if want := []string{"alice", "bob", "carol"}; !slices.Equal(got, want) {
		t.Errorf("GroupMembers = %v, want %v", got, want)
	}
}
