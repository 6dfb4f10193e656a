package backendtest

import (
	"reflect"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// testPeople: a user's settings start at the defaults; a put of the
// settings and one of the last seen each leave the other as it was.
func testPeople(t *testing.T, b store.Backend) {
	ctx := t.Context()
	want := store.Person{Settings: protocol.DefaultSettings()}
	check := func(when string) {
		t.Helper()
		got, err := b.Person(ctx, "alice")
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: Person(alice) = %+v, %v; want %+v", when, got, err, want)
		}
	}
	check("never changed")
	set := protocol.UserSettings{LastSeen: protocol.LastSeenNobody, ReadReceipts: false, Name: "Alice Liddell ✓", Blocked: []string{"mallory", "trent"}}
	if err := b.PutSettings(ctx, "alice", set); err != nil {
		t.Fatal(err)
	}
	want.Settings = set
	check("after PutSettings")
	if err := b.PutLastSeen(ctx, "alice", 1763800009000); err != nil {
		t.Fatal(err)
	}
	want.LastSeen = 1763800009000
	check("after PutLastSeen")
	set.Blocked, set.Name = []string{}, ""
	if err := b.PutSettings(ctx, "alice", set); err != nil {
		t.Fatal(err)
	}
	want.Settings = set
	check("after PutSettings again")
	if got, err := b.Person(ctx, "bob"); err != nil || !reflect.DeepEqual(got, store.Person{Settings: protocol.DefaultSettings()}) {
		t.Errorf("Person(bob) = %+v, %v; want the defaults", got, err)
	}
}
