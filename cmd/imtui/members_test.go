package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/imcore/im/client"
	"github.com/imcore/im/localstore"
	"github.com/imcore/im/server/servertest"
	"github.com/imcore/im/tui"
)

// These tests run imtui's model on the real client and store against an
// in-process server, with another user's client doing what the test
// needs: the group changes a member sees.

// waitLimit bounds every wait of these tests: it turns a hang into a
// failure, nothing waits for it to pass.
const waitLimit = 10 * time.Second

// client is a user's running client, without a UI.
type engine struct {
	t *testing.T
	c *client.Client
}

// newEngine opens the profile database at path and a client of user on
// url over it, not running; both are closed when the test ends.
func newEngine(t testing.TB, path, url, user string, options ...func(*client.Config)) *client.Client {
	t.Helper()
	st, err := localstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := client.Config{URL: url, User: user, Store: st}
	for _, o := range options {
		o(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		st.Close()
	})
	return c
}

// runEngine runs c, as imtui runs its client beside the UI, until the
// test ends; Run must then return nil.
func runEngine(t testing.TB, c *client.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// freshEngine runs a client of user on url with a fresh profile, quick
// to reconnect, until the test ends.
func freshEngine(t *testing.T, url, user string) *client.Client {
	t.Helper()
	c := newEngine(t, filepath.Join(t.TempDir(), user+".db"), url, user, func(c *client.Config) {
		c.MinBackoff, c.MaxBackoff = 5*time.Millisecond, 50*time.Millisecond
	})
	runEngine(t, c)
	return c
}

// startEngine runs a client of user whose events the test reads.
func startEngine(t *testing.T, url, user string) *engine {
	return &engine{t: t, c: freshEngine(t, url, user)}
}

// until reads events until cond holds (it is checked first, then after
// each event).
func (e *engine) until(what string, cond func(client.Event) bool) {
	e.t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	if cond(nil) {
		return
	}
	for {
		select {
		case ev := <-e.c.Events():
			if cond(ev) {
				return
			}
		case <-timer.C:
			e.t.Fatalf("%s: no such event within %v", what, waitLimit)
		}
	}
}

// createGroup creates a group of the client's user and members.
func (e *engine) createGroup(title string, members ...string) string {
	e.t.Helper()
	key := e.c.CreateGroup("", title, members)
	var conv string
	e.until("the group", func(ev client.Event) bool {
		g, ok := ev.(client.GroupChanged)
		if ok && g.Key == key {
			conv = g.Conv
		}
		return conv != ""
	})
	return conv
}

// groupOp changes group conv and waits for the answer.
func (e *engine) groupOp(conv, op string, users ...string) {
	e.t.Helper()
	e.c.GroupOp(conv, op, users, "")
	e.until(op+" "+strings.Join(users, ","), func(ev client.Event) bool {
		g, ok := ev.(client.GroupChanged)
		return ok && g.Conv == conv && slices.Contains(g.Members, users[0]) == (op == "add")
	})
}

// send sends body to conv and waits until the server stored it.
func (e *engine) send(conv, body string) {
	e.t.Helper()
	if _, err := e.c.Send(conv, body); err != nil {
		e.t.Fatal(err)
	}
	e.until("sent "+body, func(client.Event) bool {
		msgs, err := e.c.Messages(conv, 0, 50)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Body == body && m.Seq > 0 && !m.Outbox {
				return true
			}
		}
		return false
	})
}

// startUI runs imtui's model for user on its own client, 200 columns wide
// (the list beside the chat), and waits until the list shows title.
func startUI(t *testing.T, url, user, title string) *driver {
	t.Helper()
	c := freshEngine(t, url, user)
	d := startDriver(tui.New(backend{Client: c, server: url}, tui.Options{}))
	d.send(tea.WindowSizeMsg{Width: paintWidth, Height: paintHeight})
	d.waitView(t, "the list with "+title, func(v string) bool { return strings.Contains(v, title) })
	return d
}

// waitView runs the UI until its screen, without colours, satisfies cond.
func (d *driver) waitView(t *testing.T, what string, cond func(screen string) bool) string {
	t.Helper()
	v, before, err := d.until(waitLimit, func(v string) bool { return cond(ansi.Strip(v)) })
	if err != nil {
		last := ""
		if len(before) > 0 {
			last = ansi.Strip(before[len(before)-1])
		}
		t.Fatalf("%s: %v; screen:\n%s", what, err, last)
	}
	return ansi.Strip(v)
}

func press(d *driver, keys ...string) {
	for _, k := range keys {
		code := []rune(k)[0]
		if k == "enter" {
			code = tea.KeyEnter
			d.send(tea.KeyPressMsg{Code: code})
			continue
		}
		d.send(tea.KeyPressMsg{Code: code, Text: k})
	}
}

// TestNewMemberSeesTheStartOfTheConversation checks that a member added
// to a group with a history it may not read sees at once, at the top of
// the chat, that the conversation starts there for it, instead of
// "loading older messages…" until a timeout and then no marker.
func TestNewMemberSeesTheStartOfTheConversation(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t)
	alice := startEngine(t, env.URL, "alice")
	conv := alice.createGroup("team", "bob")
	alice.send(conv, "before erin came")
	alice.groupOp(conv, "add", "erin")
	alice.send(conv, "welcome erin")

	d := startUI(t, env.URL, "erin", "team")
	press(d, "enter")
	screen := d.waitView(t, "the start of the conversation", func(s string) bool {
		return strings.Contains(s, "welcome erin") && strings.Contains(s, "start of the conversation")
	})
	if strings.Contains(screen, "before erin came") || strings.Contains(screen, "loading") {
		t.Fatalf("the new member's chat:\n%s", screen)
	}
}

// panes splits a side-by-side screen into the list's lines and the
// chat's.
func panes(screen string) (list, chat []string) {
	for _, l := range strings.Split(screen, "\n") {
		left, right, _ := strings.Cut(l, "│")
		list, chat = append(list, left), append(chat, right)
	}
	return list, chat
}

// lineOf is the index of the first line holding s, -1 for none.
func lineOf(lines []string, s string) int {
	return slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, s) })
}

// TestRemovedMemberIsTold checks that a member removed from a group sees
// who removed him, in the chat as a line below the last message and in
// the list, instead of the group's last message as if still a member, and
// that the input says he is no longer a member, with no error shown for
// the chat he had open; added back, the chat shows the removal above the
// message that adds him.
func TestRemovedMemberIsTold(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t)
	alice := startEngine(t, env.URL, "alice")
	carol := startEngine(t, env.URL, "carol")
	conv := alice.createGroup("team", "bob", "carol")
	alice.send(conv, "last words for bob")

	d := startUI(t, env.URL, "bob", "last words for bob")
	press(d, "enter")
	d.waitView(t, "the chat", func(s string) bool {
		_, chat := panes(s)
		return lineOf(chat, "last words for bob") >= 0
	})

	// Every screen from the removal on is checked for an error.
	shown := ""
	watch := func(s string) {
		if shown == "" && (strings.Contains(s, "forbidden") || strings.Contains(s, "failed")) {
			shown = s
		}
	}
	carol.groupOp(conv, "remove", "bob")
	const removed, notice = "carol removed bob", "no longer a member"
	screen := d.waitView(t, "the removal told", func(s string) bool {
		watch(s)
		list, chat := panes(s)
		// The removal in the history and in the list, and the input's
		// line saying he is no longer a member.
		return lineOf(chat, removed) >= 0 && lineOf(list, removed) >= 0 && lineOf(chat, notice) >= 0
	})
	list, chat := panes(screen)
	if lineOf(list, "last words for bob") >= 0 {
		t.Errorf("the list shows the group's last message as if bob were a member:\n%s", screen)
	}
	if lineOf(chat, removed) < lineOf(chat, "last words for bob") || lineOf(chat, notice) < lineOf(chat, removed) {
		t.Errorf("the removal is not below the last message, above the input's notice:\n%s", screen)
	}
	notices := 0
	for _, l := range chat {
		if strings.Contains(l, notice) {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("the chat says %d times that bob is no longer a member, want once (the input):\n%s", notices, screen)
	}

	alice.groupOp(conv, "add", "bob")
	screen = d.waitView(t, "added back", func(s string) bool {
		watch(s)
		_, chat := panes(s)
		return lineOf(chat, "alice added bob") >= 0
	})
	_, chat = panes(screen)
	if i := lineOf(chat, removed); i < 0 || i > lineOf(chat, "alice added bob") {
		t.Errorf("added back, the removal is not above the add:\n%s", screen)
	}
	if shown != "" {
		t.Errorf("bob was shown an error:\n%s", shown)
	}
}
