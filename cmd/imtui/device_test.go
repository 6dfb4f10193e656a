package main

import (
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/tui"
)

// TestStatusBarNamesTheProfile checks that the status bar names a device
// by its profile ("bob@phone", "bob@tablet"), and by its id for the
// profile "default".
func TestStatusBarNamesTheProfile(t *testing.T) {
	t.Parallel()
	url := deadURL(t)
	for _, profile := range []string{"phone", "tablet", "default"} {
		c := newEngine(t, filepath.Join(t.TempDir(), "im.db"), url, "bob")
		want := "bob@" + profile
		if profile == "default" {
			want = "bob@" + c.Device()
		}
		d := startDriver(tui.New(backend{Client: c, server: url, profile: profile}, tui.Options{}))
		d.send(tea.WindowSizeMsg{Width: paintWidth, Height: paintHeight})
		d.waitView(t, want, func(s string) bool { return strings.Contains(s, want) })
	}
}
