package main

import (
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/localstore"
	"github.com/imcore/im/tui"
)

// TestStatusBarNamesTheProfile checks that the status bar names a device
// by its profile ("bob@phone", "bob@tablet"), and by its id for the
// profile "default".
func TestStatusBarNamesTheProfile(t *testing.T) {
	t.Parallel()
	url := deadURL(t)
	for _, profile := range []string{"phone", "tablet", "default"} {
		st, err := localstore.Open(filepath.Join(t.TempDir(), "im.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		c, err := client.New(client.Config{URL: url, User: "bob", Store: st})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		want := "bob@" + profile
		if profile == "default" {
			want = "bob@" + st.DeviceID()
		}
		d := startDriver(tui.New(backend{Client: c, server: url, profile: profile}, tui.Options{}))
		d.send(tea.WindowSizeMsg{Width: paintWidth, Height: paintHeight})
		d.waitView(t, want, func(s string) bool { return strings.Contains(s, want) })
	}
}
