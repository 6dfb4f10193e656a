package main

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/imcore/im/tui"
)

// TestOfflinePinShowsAtOnce runs imtui's model on the real client and
// store with the server down: p pins the selected chat, the 📌 shows at
// once, and the notice says the server has yet to hear of it.
func TestOfflinePinShowsAtOnce(t *testing.T) {
	t.Parallel()
	d := startOfflineUI(t)
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

// startOfflineUI runs imtui's model on the real client over a copy of the
// stored profile, in a window of the paint size. The client runs beside
// it, as imtui runs it, against a port nobody listens on: connection
// events come in while the list loads.
func startOfflineUI(t *testing.T) *driver {
	t.Helper()
	url := deadURL(t)
	c := newEngine(t, storedProfile(t), url, "alice")
	runEngine(t, c)
	d := startDriver(tui.New(backend{Client: c, server: url}, tui.Options{}))
	d.send(tea.WindowSizeMsg{Width: paintWidth, Height: paintHeight})
	return d
}
