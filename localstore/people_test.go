package localstore

import (
	"reflect"
	"testing"

	"github.com/imcore/im/protocol"
)

func TestSettingsAreKept(t *testing.T) {
	s, path := openTemp(t)
	got, ok, err := s.Settings()
	if err != nil || ok || !reflect.DeepEqual(got, protocol.DefaultSettings()) {
		t.Fatalf("before any: %+v ok %v err %v, want the defaults, not ok", got, ok, err)
	}
	want := protocol.UserSettings{LastSeen: protocol.LastSeenNobody, ReadReceipts: false, Name: "Alice Liddell", Blocked: []string{"mallory"}}
	if err := s.SetSettings(want); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = mustReopen(t, path)
	if got, ok, err := s.Settings(); err != nil || !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("after a restart: %+v ok %v err %v, want %+v", got, ok, err, want)
	}
}

func TestNamesAreKeptAndForgotten(t *testing.T) {
	s, path := openTemp(t)
	if err := s.SetNames(map[string]string{"bob": "Bob", "carol": "Carol"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNames(map[string]string{"bob": "Robert", "carol": ""}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = mustReopen(t, path)
	got, err := s.Names()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"bob": "Robert"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
}

func TestRequestFlagIsStoredAndReadBack(t *testing.T) {
	s, _ := openTemp(t)
	const dm = "d:alice:mallory"
	in := testSession(dm, 10, 100, 0)
	in.Request, in.WriteSeq = true, 1
	mustPutSessions(t, s, in)
	if !mustSession(t, s, dm).Request {
		t.Fatal("Session lost the request flag")
	}
	list, err := s.Sessions("")
	if err != nil || len(list) != 1 || !list[0].Request {
		t.Fatalf("Sessions lost the request flag: %+v, %v", list, err)
	}
	// A message of the other member keeps it; the user's own reply clears it.
	if _, err := s.ApplyMessages([]protocol.Message{msg(dm, 2, "mallory")}, "alice"); err != nil {
		t.Fatal(err)
	}
	if !mustSession(t, s, dm).Request {
		t.Fatal("a second message from mallory cleared the request")
	}
	if _, err := s.ApplyMessages([]protocol.Message{msg(dm, 3, "alice")}, "alice"); err != nil {
		t.Fatal(err)
	}
	if mustSession(t, s, dm).Request {
		t.Fatal("alice's reply left the request")
	}
}

// A sync page written before the user's reply reached the server still
// says request: the device, holding the reply, keeps the request cleared.
func TestALatePageKeepsTheReplyThatClearedTheRequest(t *testing.T) {
	s, _ := openTemp(t)
	const dm = "d:alice:mallory"
	if err := s.SetUser("alice"); err != nil {
		t.Fatal(err)
	}
	first := testSession(dm, 10, 100, 0)
	first.Request, first.WriteSeq, first.UnreadCount = true, 1, 1
	mustPutSessions(t, s, first)
	reply := msg(dm, 2, "alice")
	mustPut(t, s, msg(dm, 1, "mallory"), reply)
	if _, err := s.ApplyMessages([]protocol.Message{reply}, "alice"); err != nil {
		t.Fatal(err)
	}
	late := first
	late.ActiveTS = 11 // newer than the stored copy, older than the reply
	mustPutSessions(t, s, late)
	if got := mustSession(t, s, dm); got.Request || got.WriteSeq != 2 {
		t.Fatalf("after the late page: request %v write_seq %d, want false and 2", got.Request, got.WriteSeq)
	}
	// A page older than a message of the other member keeps its request.
	const other = "d:alice:trent"
	t1 := testSession(other, 20, 200, 0)
	t1.Request, t1.WriteSeq = true, 1
	mustPutSessions(t, s, t1)
	more := msg(other, 2, "trent")
	mustPut(t, s, msg(other, 1, "trent"), more)
	if _, err := s.ApplyMessages([]protocol.Message{more}, "alice"); err != nil {
		t.Fatal(err)
	}
	t1.ActiveTS = 21
	mustPutSessions(t, s, t1)
	if !mustSession(t, s, other).Request {
		t.Fatal("a late page lost the request of a chat alice never wrote to")
	}
}

// A profile from before sessions carried the request flag syncs its
// direct sessions again, whole: the server's copies replace them.
func TestMigrationRefreshesDirectSessionsWithoutTheRequestFlag(t *testing.T) {
	s, path := openTemp(t)
	const dm, group = "d:alice:mallory", "g:team"
	old := testSession(dm, 10, 100, 0)
	old.WriteSeq, old.UnreadCount = 1, 1
	g := testSession(group, 11, 110, 0)
	g.Kind = "group"
	mustPutSessions(t, s, old, g)
	if err := s.SetCursor("", 11); err != nil {
		t.Fatal(err)
	}
	// As an older version stored it: no "request" in the object, and the
	// schema before the migration.
	for _, q := range []string{
		`UPDATE sessions SET object = json_remove(object, '$.request')`,
		`DROP TABLE people`,
		`DELETE FROM schema_version WHERE version = 10`,
	} {
		if _, err := s.w.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()
	s = mustReopen(t, path)
	if c, _ := s.Cursor(""); c != 0 {
		t.Fatalf("cursor %d after the migration, want 0: a full sync", c)
	}
	if got := mustSession(t, s, group); got.ActiveTS != 11 {
		t.Fatalf("the group's session changed: active_ts %d", got.ActiveTS)
	}
	fresh := old
	fresh.Request = true
	mustPutSessions(t, s, fresh) // the full sync's copy, at the same active_ts
	if got := mustSession(t, s, dm); !got.Request || got.UnreadCount != 1 {
		t.Fatalf("after the full sync: %+v, want the server's copy with its request", got)
	}
	if _, err := s.Names(); err != nil {
		t.Fatalf("the people table: %v", err)
	}
}

func mustReopen(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
