package tui

import (
	"bytes"
	"encoding/base64"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"
)

// TestProgramWritesLinksAndCopies checks what reaches the terminal: a
// wrapped web address as OSC 8 hyperlinks to the whole address, and y as
// OSC 52 with the selected message's text.
func TestProgramWritesLinksAndCopies(t *testing.T) {
	f := newFixture()
	bob := "d:alice:bob"
	f.AddMessages(bob, msg(bob, 13, "bob", "look at "+longURL, ms(-time.Minute)))
	p := startProgram(t, f, 80, 24)
	p.waitScreen("yuki", "● online")
	p.press("j", "j", "enter")
	p.waitScreen("https://example.com/a/very")
	p.press("tab", "y")
	p.waitScreen("copied: look at")
	link := []byte("\x1b]8;;" + longURL + "\a")
	clip := []byte("\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte("look at "+longURL)) + "\a")
	teatest.WaitFor(t, p.tm.Output(), func(out []byte) bool {
		return bytes.Count(out, link) >= 2 && bytes.Contains(out, clip)
	}, teatest.WithDuration(15*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	if err := p.tm.Quit(); err != nil {
		t.Fatal(err)
	}
	p.tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second))
}
