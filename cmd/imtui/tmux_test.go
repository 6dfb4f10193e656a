package main

import (
	"bufio"
	"context"
	"fmt"
	"image/color"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/imcore/im/internal/testbin"
)

// tmuxWait bounds every wait of the tmux test on something to show up.
const tmuxWait = 30 * time.Second

// The tick colours of tui/styles.go's dark palette (a tmux pane does not
// say its background is light): delivered ticks are its dim colour, read
// ticks its read colour. They are repeated here because the test reads
// them off a real terminal (tmux), not from the package.
var (
	tickReadColour      = lipgloss.Color("#53BDEB") // tui darkPalette.read
	tickDeliveredColour = lipgloss.Color("#8696A0") // tui darkPalette.dim
)

// TestTmuxTwoClients runs the real binaries: imserver, and imtui as alice
// and as bob side by side in a detached tmux session. Alice starts a chat
// with bob by typing into her pane and sends a message; bob opens the chat
// in his pane and reads it; alice's pane then shows the message's ticks
// turn blue (read), told apart from the grey delivered ticks by colour.
func TestTmuxTwoClients(t *testing.T) {
	t.Parallel()
	r := newRig(t) // panes stay after their program exits: an error is there to see
	tm := r.tm
	out := tm.run("new-session", "-d", "-s", "im", "-x", "220", "-y", "50", "-P", "-F", "alice=#{pane_id}", r.imtui("alice", "alice"), ";",
		"split-window", "-h", "-t", "im", "-P", "-F", "bob=#{pane_id}", r.imtui("bob", "bob"))
	for _, l := range strings.Fields(out) {
		if name, id, ok := strings.Cut(l, "="); ok {
			p := pane{name: name, id: id}
			tm.panes = append(tm.panes, p)
			r.panes[name] = p
		}
	}
	if len(tm.panes) != 2 {
		t.Fatalf("tmux did not report two panes: %q", out)
	}
	alice, bob := tm.panes[0], tm.panes[1]

	// Both clients up and connected: keys typed before the UI runs would
	// go to a terminal still in cooked mode.
	tm.waitFor(alice, "alice online", false, containsAll("● online"))
	tm.waitFor(bob, "bob online", false, containsAll("● online"))

	// Alice: n, the user id, enter: the new chat opens with the input
	// focused; she sends, and her bubble shows the text, the time, then
	// the ticks.
	r.newChat(alice, "bob")
	text := fmt.Sprintf("hi bob, tmux %06d", time.Now().UnixNano()%1000000)
	r.send(alice, text)
	ownBubble := regexp.MustCompile(regexp.QuoteMeta(text) + ` +\d\d:\d\d [◷✓]`)

	// Her ticks, read off the screen with its colours: the glyphs after
	// the text on the bubble's line and the colour they are drawn in.
	readSGR := sgrForms(tickReadColour)
	deliveredSGR := sgrForms(tickDeliveredColour)
	for sgr := range readSGR {
		if deliveredSGR[sgr] {
			t.Fatalf("read and delivered ticks share the colour %s: the test cannot tell them apart", sgr)
		}
	}
	var seen []string // the tick states seen, in order, for the log
	ticksAre := func(want string, colour map[string]bool) func(string) bool {
		return func(s string) bool {
			for _, line := range strings.Split(s, "\n") {
				if !ownBubble.MatchString(ansi.Strip(line)) {
					continue
				}
				glyphs, fg, ok := ticksAfter(line, text)
				if !ok {
					return false
				}
				state := glyphs + " " + describeSGR(fg, readSGR, deliveredSGR)
				if len(seen) == 0 || seen[len(seen)-1] != state {
					seen = append(seen, state)
				}
				return glyphs == want && colour[fg]
			}
			return false
		}
	}

	// Bob's client stores the message and acknowledges it while his chat
	// is closed: alice sees two grey ticks, delivered but not read.
	tm.waitFor(bob, "alice's chat in bob's list", false, containsAll("alice", text))
	tm.waitFor(alice, "delivered (grey) ticks on alice's message", true, ticksAre("✓✓", deliveredSGR))

	// Bob opens the chat (enter on the only row, the selected one), a
	// request from alice: the message is on his screen, with the terminal
	// focused, so he reads it.
	tm.keys(bob, "Enter")
	otherBubble := regexp.MustCompile(regexp.QuoteMeta(text) + ` +\d\d:\d\d`)
	tm.waitFor(bob, "the message in bob's open chat", false, func(s string) bool {
		return requestOpen("alice")(s) && otherBubble.MatchString(s)
	})

	// Alice: the ticks of her bubble turn read-blue.
	tm.waitFor(alice, "read (blue) ticks on alice's message", true, ticksAre("✓✓", readSGR))
	t.Logf("alice's ticks went: %s", strings.Join(seen, " → "))
}

// containsAll returns a screen condition: every s is shown.
func containsAll(ss ...string) func(string) bool {
	return func(screen string) bool {
		for _, s := range ss {
			if !strings.Contains(screen, s) {
				return false
			}
		}
		return true
	}
}

// describeSGR names a foreground for the log.
func describeSGR(fg string, read, delivered map[string]bool) string {
	switch {
	case read[fg]:
		return "read colour (" + fg + ")"
	case delivered[fg]:
		return "grey (" + fg + ")"
	case fg == "":
		return "default colour"
	}
	return "colour " + fg
}

// sgrForms returns the foreground SGR parameters c may be written with,
// depending on the colour profile imtui detects in the pane: true colour,
// the 256-colour palette, the 16 colours.
func sgrForms(c color.Color) map[string]bool {
	r, g, b, _ := c.RGBA()
	i16 := int(ansi.Convert16(c))
	basic := 30 + i16
	if i16 >= 8 {
		basic = 90 + i16 - 8
	}
	return map[string]bool{
		fmt.Sprintf("38;2;%d;%d;%d", r>>8, g>>8, b>>8):  true,
		fmt.Sprintf("38;5;%d", int(ansi.Convert256(c))): true,
		strconv.Itoa(basic):                             true,
	}
}

// ticksAfter finds the tick glyphs (✓, ✓✓ or ◷) that follow text on a
// captured line with its escape sequences, and returns them with the
// foreground they are drawn in ("" for the default), as SGR parameters
// normalised to "38;5;N", "38;2;R;G;B" or "3N"/"9N".
func ticksAfter(line, text string) (glyphs, fg string, ok bool) {
	runes, fgs := styledRunes(line)
	var plain strings.Builder
	after := false
	for i, r := range runes {
		plain.WriteRune(r)
		if !after {
			after = strings.Contains(plain.String(), text)
			continue
		}
		switch {
		case r == '✓' || r == '◷':
			if glyphs == "" {
				fg = fgs[i]
			}
			glyphs += string(r)
			ok = true
		case glyphs != "":
			return glyphs, fg, ok
		}
	}
	return glyphs, fg, ok
}

// styledRunes returns the characters a captured line with its escape
// sequences shows, up to an escape sequence it cuts short, each with the
// foreground it is drawn in, as applySGR normalises it ("" for the
// default).
func styledRunes(line string) (runes []rune, fgs []string) {
	cur := ""
	for i := 0; i < len(line); {
		if line[i] == 0x1b && i+1 < len(line) && line[i+1] == '[' {
			j := i + 2
			for j < len(line) && (line[j] < 0x40 || line[j] > 0x7e) {
				j++
			}
			if j == len(line) {
				break
			}
			if line[j] == 'm' {
				cur = applySGR(cur, line[i+2:j])
			}
			i = j + 1
			continue
		}
		r, n := utf8.DecodeRuneInString(line[i:])
		i += n
		runes = append(runes, r)
		fgs = append(fgs, cur)
	}
	return runes, fgs
}

// applySGR returns the foreground after the SGR sequence with params.
func applySGR(fg, params string) string {
	ps := strings.Split(params, ";")
	for k := 0; k < len(ps); k++ {
		p := ps[k]
		if strings.Contains(p, ":") { // 38:5:N, 38:2::R:G:B
			sub := strings.Split(p, ":")
			if sub[0] == "38" && len(sub) >= 3 {
				switch sub[1] {
				case "5":
					fg = "38;5;" + sub[2]
				case "2":
					fg = "38;2;" + strings.Join(sub[len(sub)-3:], ";")
				}
			}
			continue
		}
		switch p {
		case "", "0", "39":
			fg = ""
		case "38", "48", "58":
			if k+1 >= len(ps) {
				continue
			}
			n := 0
			switch ps[k+1] {
			case "5":
				n = 2
			case "2":
				n = 4
			}
			if p == "38" && k+n < len(ps) {
				fg = "38;" + strings.Join(ps[k+1:k+n+1], ";")
			}
			k += n
		default:
			if v, err := strconv.Atoi(p); err == nil && (v >= 30 && v <= 37 || v >= 90 && v <= 97) {
				fg = p
			}
		}
	}
	return fg
}

// tmuxSession is a tmux server of the test's own (-L socket), detached.
type tmuxSession struct {
	t      *testing.T
	path   string
	socket string
	env    []string
	panes  []pane
	onFail func() string // more to print when a wait fails
}

// tmuxSockets numbers the tmux servers of this test binary (tests run in
// parallel, each with a server of its own).
var tmuxSockets atomic.Int64

// pane is one tmux pane: who runs in it and its id.
type pane struct{ name, id string }

func newTmux(t *testing.T, path string) *tmuxSession {
	tm := &tmuxSession{
		t:      t,
		path:   path,
		socket: fmt.Sprintf("imtui-test-%d-%d-%d", os.Getpid(), time.Now().UnixNano(), tmuxSockets.Add(1)),
	}
	// The panes inherit the server's environment: no outer tmux to nest
	// in, no forced colour settings that would change what is drawn.
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "TMUX", "TMUX_PANE", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLORTERM", "TTY_FORCE":
			continue
		}
		tm.env = append(tm.env, kv)
	}
	t.Cleanup(func() {
		socket, err := tm.command("display-message", "-p", "#{socket_path}").Output()
		cmd := tm.command("kill-server")
		if out, err := cmd.CombinedOutput(); err != nil && !strings.Contains(string(out), "no server running") {
			t.Logf("tmux kill-server: %v: %s", err, out)
		}
		// tmux leaves its socket file behind.
		if path := strings.TrimSpace(string(socket)); err == nil && strings.HasSuffix(path, tm.socket) {
			os.Remove(path)
		}
	})
	return tm
}

func (tm *tmuxSession) command(args ...string) *exec.Cmd {
	// -f /dev/null: none of the user's configuration (focus-events,
	// default-terminal...) changes what the panes see.
	cmd := exec.Command(tm.path, append([]string{"-f", "/dev/null", "-L", tm.socket}, args...)...)
	cmd.Env = tm.env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs a tmux command and returns its output; it fails the test on error.
func (tm *tmuxSession) run(args ...string) string {
	tm.t.Helper()
	out, err := tm.command(args...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys sends key names (Enter, Escape, n...) to p.
func (tm *tmuxSession) keys(p pane, keys ...string) {
	tm.t.Helper()
	tm.run(append([]string{"send-keys", "-t", p.id}, keys...)...)
}

// text types s into p literally.
func (tm *tmuxSession) text(p pane, s string) {
	tm.t.Helper()
	tm.run("send-keys", "-t", p.id, "-l", s)
}

// capture returns what p shows, with colour escapes if escapes is set.
func (tm *tmuxSession) capture(p pane, escapes bool) (string, error) {
	args := []string{"capture-pane", "-p", "-t", p.id}
	if escapes {
		args = append(args, "-e")
	}
	out, err := tm.command(args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("tmux capture-pane: %v: %s", err, out)
	}
	return string(out), nil
}

// waitFor re-captures p every 100ms until cond holds of its screen, and
// fails the test, printing every pane, when tmuxWait passes first.
func (tm *tmuxSession) waitFor(p pane, what string, escapes bool, cond func(screen string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(tmuxWait)
	for {
		screen, err := tm.capture(p, escapes)
		if err != nil {
			tm.t.Fatalf("waiting for %s: %v\n%s", what, err, tm.dump())
		}
		if cond(screen) {
			return screen
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("%s's pane did not show %s within %v\n%s", p.name, what, tmuxWait, tm.dump())
			if escapes {
				msg += fmt.Sprintf("\n--- %s's pane with escapes (\\x1b as ESC):\n%s", p.name,
					strings.ReplaceAll(screen, "\x1b", "ESC"))
			}
			tm.t.Fatal(msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dump renders every pane's screen, and onFail's extras, for a failure.
func (tm *tmuxSession) dump() string {
	var b strings.Builder
	for _, p := range tm.panes {
		screen, err := tm.capture(p, false)
		if err != nil {
			screen = err.Error()
		}
		fmt.Fprintf(&b, "--- %s's pane (%s):\n%s\n", p.name, p.id, screen)
	}
	if tm.onFail != nil {
		b.WriteString(tm.onFail())
	}
	return b.String()
}

// The binaries are built once per test run, into a directory TestMain
// removes.
// TestMain removes the binaries the tests built, and the stored profile
// they copied.
func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	if profileDir != "" {
		os.RemoveAll(profileDir)
	}
	os.Exit(code)
}

// imserverProc is a running imserver.
type imserverProc struct {
	addr string
	logs *lineLog
	kill func() // ends it at once (SIGKILL) and waits for it
}

var listeningRE = regexp.MustCompile(`msg=listening addr=(\S+)`)

// startImserver runs imserver on listen (127.0.0.1:0 for a free port; it
// reports the address it got) with its data in dataDir, and waits until
// /healthz answers.
func startImserver(t *testing.T, dataDir, listen string) *imserverProc {
	t.Helper()
	cmd := exec.Command(testbin.Path(t, "imserver"), "serve", "-listen", listen, "-data", dataDir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start imserver: %v", err)
	}
	p := &imserverProc{logs: &lineLog{}}
	addr := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.logs.add(sc.Text())
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		<-scanned // Wait closes the pipe: read it all first
		done <- cmd.Wait()
	}()
	var once sync.Once
	p.kill = func() {
		once.Do(func() {
			cmd.Process.Kill()
			<-done
		})
	}
	t.Cleanup(p.kill)
	select {
	case p.addr = <-addr:
	case err := <-done:
		t.Fatalf("imserver exited before listening: %v\n%s", err, p.logs.tail(50))
	case <-time.After(tmuxWait):
		t.Fatalf("imserver did not listen within %v\n%s", tmuxWait, p.logs.tail(50))
	}
	ctx, cancel := context.WithTimeout(context.Background(), tmuxWait)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("imserver's /healthz did not answer 200 within %v (last: %v)\n%s", tmuxWait, err, p.logs.tail(50))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lineLog collects a process's log lines.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
}

func (l *lineLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines[max(0, len(l.lines)-n):], "\n")
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// shellQuote quotes s for sh (tmux runs pane commands through it).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
