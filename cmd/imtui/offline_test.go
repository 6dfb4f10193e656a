package main

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/imcore/im/client"
	"github.com/imcore/im/localstore"
	"github.com/imcore/im/tui"
)

// TestOfflinePinShowsAtOnce runs imtui's model on the real engine and
// store with the server down: p pins the selected chat, the 📌 shows at
// once, and the notice says the server has yet to hear of it.
func TestOfflinePinShowsAtOnce(t *testing.T) {
	t.Parallel()
	path := storedProfile(t)
	url := deadURL(t)
	st, err := localstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := client.New(client.Config{URL: url, User: "alice", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- c.Run(ctx) }()
	defer func() {
		cancel()
		<-runDone
		c.Close()
	}()

	d := startDriver(tui.New(backend{Client: c, server: url}, tui.Options{}))
	d.send(tea.WindowSizeMsg{Width: paintWidth, Height: paintHeight})
	if _, _, err := d.until(10*time.Second, func(v string) bool {
		return strings.Contains(v, fixtureTitle(1)) && strings.Contains(ansi.Strip(v), "○ offline")
	}); err != nil {
		t.Fatalf("the list, offline: %v", err)
	}
	d.send(tea.KeyPressMsg{Code: 'j', Text: "j"})
	d.send(tea.KeyPressMsg{Code: 'p', Text: "p"})
	pinned := func(v string) bool {
		lines := strings.Split(ansi.Strip(v), "\n")
		for i, l := range lines {
			if strings.Contains(l, fixtureTitle(1)) && i+1 < len(lines) {
				return strings.Contains(lines[i+1], "📌") && strings.Contains(v, "pinned "+fixtureTitle(1)+" (offline")
			}
		}
		return false
	}
	if _, before, err := d.until(10*time.Second, pinned); err != nil {
		last := ""
		if len(before) > 0 {
			last = ansi.Strip(before[len(before)-1])
		}
		t.Fatalf("the pin does not show offline: %v\n%s", err, last)
	}
}
