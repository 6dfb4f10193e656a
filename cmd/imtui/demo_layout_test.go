package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// TestDemoShowsTheClientsSideBySide runs the README's demo
// (scripts/demo.sh, detached) laid out for terminals of 320 and 220
// columns and checks what a newcomer sees: every client's pane is at
// least 100 columns wide, so the list and the chat sit side by side, and
// bob's two devices read bob@phone and bob@tablet. Alice's list names Bob
// and Carol, and her last messages to them show blue ticks (bob read it)
// and grey ones (carol read it with her read receipts off).
func TestDemoShowsTheClientsSideBySide(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: " + err.Error())
	}
	if testing.Short() {
		t.Skip("builds and runs the whole demo")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, cols := range []int{320, 220} {
		t.Run(fmt.Sprint(cols, " columns"), func(t *testing.T) {
			t.Parallel() // each demo has its ports, its directory and its tmux server
			// A tmux server of the test's own, never the user's.
			tmuxDir := t.TempDir()
			env := append(os.Environ(),
				"TMUX=", "TMUX_TMPDIR="+tmuxDir,
				"IM_DEMO_DETACH=1", "IM_DEMO_COLS="+strconv.Itoa(cols), "IM_DEMO_ROWS=60",
				"IM_DEMO_PORT="+strconv.Itoa(freeTCPPortPair(t)), "IM_DEMO_DIR="+t.TempDir(),
				"IM_DEMO_SESSION=demo-test")
			tmux := func(args ...string) string {
				cmd := exec.Command("tmux", args...)
				cmd.Env = env
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			t.Cleanup(func() {
				cmd := exec.Command("tmux", "kill-server")
				cmd.Env = env
				_ = cmd.Run()
			})
			demo := exec.Command("bash", filepath.Join(root, "scripts", "demo.sh"))
			demo.Dir = root
			demo.Env = env
			if out, err := demo.CombinedOutput(); err != nil {
				t.Fatalf("scripts/demo.sh: %v\n%s", err, out)
			}

			// The bound is for a machine running the whole suite at once,
			// where three imtui and a server start side by side; alone the
			// panes come within seconds.
			const within = 120 * time.Second
			deadline := time.Now().Add(within)
			for {
				panes := tmux("list-panes", "-s", "-t", "demo-test", "-F", "#{pane_id} #{pane_width}")
				var clients, narrow []string
				var screens strings.Builder
				for _, line := range strings.Split(strings.TrimSpace(panes), "\n") {
					id, width, _ := strings.Cut(line, " ")
					screen := tmux("capture-pane", "-p", "-t", id)
					if !strings.Contains(screen, "Chats") {
						continue // the server's log
					}
					clients = append(clients, id)
					screens.WriteString(screen)
					if w, _ := strconv.Atoi(width); w < 100 {
						narrow = append(narrow, line)
					}
				}
				all := screens.String()
				if len(clients) == 3 && strings.Contains(all, "bob@phone") && strings.Contains(all, "bob@tablet") {
					if len(narrow) > 0 {
						t.Fatalf("client panes narrower than 100 columns (the chat would hide the list): %v", narrow)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after %v the demo shows %d client panes (want 3, with bob@phone and bob@tablet):\n%s", within, len(clients), all)
				}
				time.Sleep(200 * time.Millisecond)
			}

			// Alice's list: the names, bob's read (blue) and carol's
			// hidden read (grey).
			readSGR, greySGR := sgrForms(tickReadColour), sgrForms(tickDeliveredColour)
			var screen string
			for {
				screen = ""
				for _, id := range strings.Fields(tmux("list-panes", "-s", "-t", "demo-test", "-F", "#{pane_id}")) {
					if s := tmux("capture-pane", "-p", "-e", "-t", id); strings.Contains(ansi.Strip(s), "alice@laptop") {
						screen = s
					}
				}
				plain := ansi.Strip(screen)
				bobTick, bobFg := ticksBefore(screen, "press ? in")
				carolTick, carolFg := ticksBefore(screen, "sure — 12:30")
				if strings.Contains(plain, "👤 Bob") && strings.Contains(plain, "👤 Carol") &&
					bobTick == "✓✓" && readSGR[bobFg] && carolTick == "✓✓" && greySGR[carolFg] {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("alice's pane does not show Bob and Carol by name, bob's ticks blue (%s %s) and carol's grey (%s %s):\n%s",
						bobTick, bobFg, carolTick, carolFg, plain)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// ticksBefore finds the tick glyphs a list row shows before the preview
// text on a captured line with its escape sequences, and the foreground
// they are drawn in (as ticksAfter gives it).
func ticksBefore(screen, text string) (glyphs, fg string) {
	for _, line := range strings.Split(screen, "\n") {
		runes, fgs := styledRunes(line)
		plain := string(runes)
		at := strings.Index(plain, text)
		if at < 0 {
			continue
		}
		i := len([]rune(plain[:at])) - 1
		for i >= 0 && runes[i] == ' ' {
			i--
		}
		for ; i >= 0 && (runes[i] == '✓' || runes[i] == '◷'); i-- {
			glyphs = string(runes[i]) + glyphs
			fg = fgs[i]
		}
		return glyphs, fg
	}
	return "", ""
}

// freeTCPPortPair returns a loopback port that is free, as is the next one
// (the demo's second node would take it).
func freeTCPPortPair(t *testing.T) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if next, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+1)); err == nil {
			next.Close()
			return port
		}
	}
	t.Fatal("no two free loopback ports in a row")
	return 0
}
