package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imcore/im/internal/testbin"
)

// rig is the real binaries in a detached tmux server of the test's own:
// one imserver, and imtui clients each in a tmux session of its own size.
type rig struct {
	t       *testing.T
	dir     string
	srvData string
	srv     *imserverProc
	tm      *tmuxSession
	panes   map[string]pane
}

// newRig builds the binaries, starts imserver and a tmux server whose
// panes stay after their program exits (its last screen, an error, is
// then there to see).
func newRig(t *testing.T) *rig {
	t.Helper()
	tmuxPath, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed: " + err.Error())
	}
	r := &rig{t: t, dir: t.TempDir(), panes: map[string]pane{}}
	r.srvData = filepath.Join(r.dir, "server")
	r.srv = startImserver(t, r.srvData, "127.0.0.1:0")
	r.tm = newTmux(t, tmuxPath)
	r.tm.run("set-option", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-s", "rig", "-x", "20", "-y", "5", "cat")
	r.tm.onFail = r.logs
	return r
}

// url is the server's WebSocket address.
func (r *rig) url() string { return "ws://" + r.srv.addr + "/ws" }

// imtui is the command line of user's client as name (its own data
// directory and log), with extra flags.
func (r *rig) imtui(name, user string, extra ...string) string {
	args := []string{
		shellQuote(testbin.Path(r.t, "imtui")),
		"-server", shellQuote(r.url()),
		"-user", user,
		"-data", shellQuote(filepath.Join(r.dir, "clients-"+name)),
		"-log", shellQuote(filepath.Join(r.dir, name+".log")),
	}
	for _, e := range extra {
		args = append(args, shellQuote(e))
	}
	return strings.Join(args, " ")
}

// client starts user's imtui as name in a w x h terminal and waits for it
// to be online.
func (r *rig) client(name, user string, w, h int, extra ...string) pane {
	r.t.Helper()
	out := r.tm.run("new-session", "-d", "-s", name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h),
		"-P", "-F", "#{pane_id}", r.imtui(name, user, extra...))
	p := pane{name: name, id: strings.TrimSpace(out)}
	r.panes[name] = p
	r.tm.panes = append(r.tm.panes, p)
	// Keys typed before the UI runs would go to a terminal still in
	// cooked mode.
	r.tm.waitFor(p, name+" online", false, containsAll("● online"))
	return p
}

// restartClient quits the client in p and starts it again, as name.
func (r *rig) restartClient(p pane, user string, extra ...string) {
	r.t.Helper()
	r.tm.run("respawn-pane", "-k", "-t", p.id, r.imtui(p.name, user, extra...))
}

// stopServer kills imserver at once (SIGKILL).
func (r *rig) stopServer() { r.srv.kill() }

// startServer starts imserver again on its address, on the same data.
func (r *rig) startServer() {
	r.t.Helper()
	r.srv = startImserver(r.t, r.srvData, r.srv.addr)
}

// paste pastes text into p as a terminal paste (bracketed, when the
// program asked for it, as Bubble Tea does).
func (r *rig) paste(p pane, text string) {
	r.t.Helper()
	load := r.tm.command("load-buffer", "-b", "rig-paste", "-")
	load.Stdin = strings.NewReader(text)
	if out, err := load.CombinedOutput(); err != nil {
		r.t.Fatalf("tmux load-buffer: %v: %s", err, out)
	}
	r.tm.run("paste-buffer", "-p", "-d", "-b", "rig-paste", "-t", p.id)
}

// logs is what a failed wait prints beside the panes: the server's log
// and the clients' logs.
func (r *rig) logs() string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- imserver log:\n%s\n", r.srv.logs.tail(30))
	for name := range r.panes {
		log, _ := os.ReadFile(filepath.Join(r.dir, name+".log"))
		fmt.Fprintf(&b, "--- %s's client log (tail):\n%s\n", name, tailLines(string(log), 30))
	}
	return b.String()
}
