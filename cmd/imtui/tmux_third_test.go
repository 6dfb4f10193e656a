package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/imcore/im/localstore"
)

// More screens users found wrong, each reproduced with the real binaries
// the way a user met it, and kept as a test of what the client now does.

// quit quits the client in p with ctrl+c and waits for it to exit, so
// that its database can be read.
func (r *rig) quit(p pane) {
	r.t.Helper()
	r.tm.keys(p, "C-c")
	deadline := time.Now().Add(tmuxWait)
	for {
		out, err := r.tm.command("display-message", "-p", "-t", p.id, "#{pane_dead}").Output()
		if err == nil && strings.TrimSpace(string(out)) == "1" {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s did not quit within %v\n%s", p.name, tmuxWait, r.tm.dump())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stored returns the bodies of conv's messages in the database of the
// client name (user's default profile), in seq order: the server's order.
func (r *rig) stored(name, user, conv string) []string {
	r.t.Helper()
	st, err := localstore.Open(filepath.Join(r.dir, "clients-"+name, user, "default", "im.db"))
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	msgs, err := st.Messages(conv, 0, 1000)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		if m.Seq > 0 && m.Kind == "" {
			out = append(out, m.Body)
		}
	}
	return out
}

// TestTmuxBurstOfMessagesKeepsOrder: forty messages typed in one burst
// (each with its Enter, in one write to the terminal) are stored in the
// order they were typed, on the server and at the recipient.
func TestTmuxBurstOfMessagesKeepsOrder(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	alice := r.client("alice", "alice", 100, 30)
	bob := r.client("bob", "bob", 100, 30)
	r.newChat(alice, "bob")
	r.send(alice, "first")

	var keys, want []string
	for i := 1; i <= 40; i++ {
		body := fmt.Sprintf("burst-%02d", i)
		want = append(want, body)
		keys = append(keys, body, "Enter")
	}
	r.tm.keys(alice, keys...)
	// Whatever their order, all of them reach bob (and are sent).
	r.tm.waitFor(bob, "the burst at bob", false, containsAll("41 unread"))
	r.tm.waitFor(alice, "the burst sent", false, func(s string) bool { return !strings.Contains(s, "◷") })
	r.quit(alice)
	r.quit(bob)

	for _, who := range []string{"alice", "bob"} {
		got := slices.DeleteFunc(r.stored(who, who, "d:alice:bob"), func(b string) bool { return !strings.HasPrefix(b, "burst-") })
		if !slices.Equal(got, want) {
			t.Errorf("%s stores the burst in the server's order as\n%v\nwant\n%v", who, got, want)
		}
	}
}

// TestTmuxWordsOnTheListDeleteAndQuitNothing: words typed while the list
// has the keys (the whole screen at 80 columns) delete no chat and do not
// quit: "daily" is not d then y, and "quick note" is not q.
func TestTmuxWordsOnTheListDeleteAndQuitNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	alice := r.client("alice", "alice", 80, 24)
	r.newChat(alice, "bob")
	r.send(alice, "hello bob")
	r.tm.keys(alice, "Escape")
	r.tm.waitFor(alice, "the list", false, containsAll("Chats", "👤 bob"))

	for i, words := range []string{"daily", "quick note", "yes", "delete my daily notes", "quit"} {
		r.tm.text(alice, words)
		r.tm.keys(alice, "Enter")
		// A mark typed after the word shows once the word has been read
		// (keys are read in order); esc then closes the search, and the
		// next word waits for that, since a key right after a lone esc
		// would be read as alt and that key.
		mark := fmt.Sprintf("zx%d", i)
		r.tm.text(alice, "/"+mark)
		r.tm.waitFor(alice, "the mark after "+words, false, containsAll(mark))
		r.tm.keys(alice, "Escape")
		r.tm.waitFor(alice, "the list after "+words, false, func(s string) bool {
			return strings.Contains(s, "Chats") && !strings.Contains(s, mark)
		})
	}
	// Keys are read in order: once the search shows what is typed last,
	// the words before it have been read.
	r.tm.keys(alice, "/")
	r.tm.text(alice, "bo")
	screen := r.tm.waitFor(alice, "the search typed after the words", false, containsAll("/ bo"))
	if !strings.Contains(screen, "👤 bob") {
		t.Fatalf("bob's chat is gone after words typed on the list:\n%s", screen)
	}
	r.tm.keys(alice, "Escape")
	r.tm.waitFor(alice, "bob's chat in the list, still running", false, containsAll("👤 bob", "● online"))
}

// TestTmuxRefusedFolderNameIsNotKept: a folder name the server refuses
// ("Work Stuff") is not kept on the device: the dialog says the rule and
// refuses it, and neither the list nor a restart shows the folder.
func TestTmuxRefusedFolderNameIsNotKept(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	alice := r.client("alice", "alice", 100, 30)
	r.newChat(alice, "bob")
	r.send(alice, "hello bob")
	r.toList(alice)
	r.tm.keys(alice, "c")
	r.tm.waitFor(alice, "the category dialog with the rule", false, containsAll("Move bob to a category", "a-z 0-9 _ . -"))
	r.tm.text(alice, "Work Stuff")
	r.tm.keys(alice, "Enter")
	r.tm.waitFor(alice, "the name refused", false, containsAll(`try "work-stuff"`))
	r.tm.keys(alice, "Escape")
	noFolder := func(s string) bool {
		return strings.Contains(s, "👤 bob") && !strings.Contains(s, "Move bob") && !strings.Contains(s, "Work Stuff") && !strings.Contains(s, "📁")
	}
	r.tm.waitFor(alice, "the list without the folder", false, noFolder)
	r.restartClient(alice, "alice")
	r.tm.waitFor(alice, "alice online again", false, containsAll("● online", "👤 bob"))
	r.tm.waitFor(alice, "the list without the folder after a restart", false, noFolder)
}

// TestTmuxFailsOverToTheNextServer: given two servers, a client whose
// server goes away comes back online on the other at once, and the status
// bar names it.
func TestTmuxFailsOverToTheNextServer(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	other := startImserver(t, filepath.Join(r.dir, "other"), "127.0.0.1:0")
	otherURL := "ws://" + other.addr + "/ws"
	alice := r.client("alice", "alice", 140, 24, "-server", r.url()+","+otherURL)
	r.tm.waitFor(alice, "alice on the first server", false, containsAll("● online", r.url()))
	r.stopServer()
	r.tm.waitFor(alice, "alice online on the second server", false, containsAll("● online", otherURL))
}
