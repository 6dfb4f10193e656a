package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/imcore/im/internal/testbin"
	"github.com/imcore/im/server"
)

// Process is the real imserver binary running as a child process, on a
// fixed address and data directory: what a test kills (SIGKILL), pauses
// (SIGSTOP) and starts again as a machine would. It is killed when the
// test ends.
type Process struct {
	t    testing.TB
	Addr string // host:port it listens on
	args []string
	// log is what every start of it wrote, under logMu (the process's
	// output is copied in while Kill waits for it to exit).
	log   *bytes.Buffer
	logMu sync.Mutex
	mu    sync.Mutex // cmd and done
	cmd   *exec.Cmd
	done  chan struct{}
}

// StartProcess runs imserver with args (after "serve -listen ADDR") and
// returns once its /readyz answers 200.
func StartProcess(t testing.TB, args ...string) *Process {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := &Process{t: t, Addr: addr, args: append([]string{"serve", "-listen", addr}, args...), log: &bytes.Buffer{}}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("imserver on %s logged:\n%s", p.Addr, p.Logs())
		}
	})
	p.Start()
	return p
}

// Processes runs n nodes of the scaled-out deployment so as processes,
// named A, B, …, each with a data directory of its own and args added,
// and returns once every one answers /readyz.
func Processes(t testing.TB, so server.ScaleOut, n int, args ...string) []*Process {
	t.Helper()
	OncePerSuite(t)
	nodes := make([]*Process, n)
	for i := range nodes {
		nodes[i] = StartProcess(t, append([]string{
			"-data", t.TempDir(), "-node-id", string(rune('A' + i)),
			"-store", "dynamodb", "-dynamodb-endpoint", so.DynamoDBEndpoint, "-region", so.Region,
			"-table-prefix", so.TablePrefix, "-redis", so.RedisURL, "-log-level", "debug",
		}, args...)...)
	}
	return nodes
}

// Start starts the process (again, after Kill) and returns once its
// /readyz answers 200.
func (p *Process) Start() {
	p.t.Helper()
	p.mu.Lock()
	if p.cmd != nil {
		p.mu.Unlock()
		p.t.Fatalf("imserver on %s is running already", p.Addr)
	}
	cmd := exec.Command(testbin.Path(p.t, "imserver"), p.args...)
	cmd.Stdout, cmd.Stderr = p.logWriter(), p.logWriter()
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		p.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	p.AwaitReady()
}

// AwaitReady returns once the process's /readyz answers 200; it fails
// the test if the process exits first or Timeout passes.
func (p *Process) AwaitReady() {
	p.t.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		if p.Ready() {
			return
		}
		p.mu.Lock()
		done := p.done
		p.mu.Unlock()
		select {
		case <-done:
			p.t.Fatalf("imserver on %s exited before it was ready", p.Addr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("imserver on %s not ready within %v", p.Addr, Timeout)
		}
	}
}

// Ready reports whether /readyz answers 200 now.
func (p *Process) Ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Addr+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Kill sends SIGKILL and waits for the process to exit (nothing when it
// is not running).
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT) // a paused process dies too
	cmd.Process.Kill()
	<-done // not under p.mu: the process's last output is still being logged
}

// Pause stops the process with SIGSTOP: its sockets stay open, and it
// answers nothing until Resume (a long GC pause, a stalled VM).
func (p *Process) Pause() { p.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume() { p.signal(syscall.SIGCONT) }

func (p *Process) signal(sig syscall.Signal) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		p.t.Fatalf("imserver on %s is not running", p.Addr)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// Env is an Env reaching the process, to Dial clients to it (its Server
// is nil).
func (p *Process) Env() *Env {
	return &Env{T: p.t, Addr: p.Addr, URL: "ws://" + p.Addr + "/ws"}
}

// Logs returns what the process wrote, over every start.
func (p *Process) Logs() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.log.String()
}

// logWriter appends to the process's log under its lock.
func (p *Process) logWriter() *lockedWriter { return &lockedWriter{p: p} }

type lockedWriter struct{ p *Process }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.logMu.Lock()
	defer w.p.logMu.Unlock()
	return w.p.log.Write(b)
}

// OwnsShard reports whether the node's /status says it owns shard.
func (p *Process) OwnsShard(t testing.TB, id string, shard int) bool {
	t.Helper()
	for _, n := range p.Status(t).Nodes {
		if n.ID == id {
			for _, s := range n.Shards {
				if s == shard {
					return true
				}
			}
		}
	}
	return false
}

// Status reads the process's /status.
func (p *Process) Status(t testing.TB) server.Status {
	t.Helper()
	return ReadStatus(t, "http://"+p.Addr+"/status")
}

// ReadStatus reads a server's /status (url up to the path) as JSON.
func ReadStatus(t testing.TB, url string) server.Status {
	t.Helper()
	resp, err := http.Get(url + "?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st server.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return st
}
