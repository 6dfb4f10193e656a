package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imcore/im/internal/testbin"
)

// TestMain removes the imserver binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// process is a running imserver.
type process struct {
	cmd  *exec.Cmd
	addr string
	logs *logBuffer
	done chan error
}

var listeningLine = regexp.MustCompile(`msg=listening addr=(\S+)`)

// startServer runs imserver with args and waits until it listens.
func startServer(t *testing.T, args ...string) *process {
	t.Helper()
	return startServerCmd(t, exec.Command(testbin.Path(t, "imserver"), append([]string{"serve", "-listen", "127.0.0.1:0"}, args...)...))
}

// startServerUnder runs imserver through a shell that first runs setup
// (e.g. "ulimit -n 300"), then waits until it listens.
func startServerUnder(t *testing.T, setup string, args ...string) *process {
	t.Helper()
	argv := append([]string{"-c", setup + ` && exec "$0" "$@"`, testbin.Path(t, "imserver"), "serve", "-listen", "127.0.0.1:0"}, args...)
	return startServerCmd(t, exec.Command("bash", argv...))
}

// startServerCmd starts cmd, an imserver, and waits until it listens.
func startServerCmd(t *testing.T, cmd *exec.Cmd) *process {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, logs: &logBuffer{}, done: make(chan error, 1)}
	addr := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.logs.add(sc.Text())
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default: // the first one counts
				}
			}
		}
	}()
	go func() {
		<-scanned // Wait closes the pipe: read it all first, the last lines too
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	select {
	case p.addr = <-addr:
		return p
	case err := <-p.done:
		t.Fatalf("imserver exited before listening: %v\n%s", err, p.logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("imserver did not listen within 30s\n%s", p.logs)
	}
	return nil
}

// stop sends sig and waits for the process to exit.
func (p *process) stop(t *testing.T, sig os.Signal) error {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("imserver did not exit after %v\n%s", sig, p.logs)
		return nil
	}
}

// logBuffer collects a process's log lines.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(line string) {
	b.mu.Lock()
	b.lines = append(b.lines, line)
	b.mu.Unlock()
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// runCommand runs imserver to completion and returns its output and exit code.
func runCommand(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin := testbin.Path(t, "imserver") // built before the clock starts: a cold build can take a while
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code = 0
	if exitErr, ok := err.(*exec.ExitError); ok {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}
