// Package childproc runs a test of the current test binary as a child
// process that a test can pause (SIGSTOP), resume and read line by line:
// how a test shows what a process paused past its lease does when it
// wakes.
package childproc

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Child is a running child test process.
type Child struct {
	t     testing.TB
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

// Start runs the test named test of the current binary in a child
// process, with env added to this one's (the child tells itself apart by
// one of them). Its stderr goes to this process's; its stdout is read by
// Expect. It is killed when t ends.
func Start(t testing.TB, test string, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v=false")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := &Child{t: t, cmd: cmd, in: in, lines: make(chan string, 100)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	return c
}

// Expect returns the child's next line that starts with prefix, skipping
// the others, and fails the test if the child exits first, says a line
// starting with "error", or says nothing of the kind within 30 s.
func (c *Child) Expect(prefix string) string {
	c.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("the child exited before saying %q", prefix)
			}
			if strings.HasPrefix(l, "error") {
				c.t.Fatalf("child: %s", l)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			c.t.Fatalf("the child did not say %q within 30s", prefix)
		}
	}
}

// Pause stops the child (SIGSTOP).
func (c *Child) Pause() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		c.t.Fatal(err)
	}
}

// Resume resumes the child (SIGCONT) and tells it so: a line "resumed"
// on its stdin (see AwaitResume), since the child cannot tell a pause
// from its own clock alone.
func (c *Child) Resume() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		c.t.Fatal(err)
	}
	if _, err := io.WriteString(c.in, "resumed\n"); err != nil {
		c.t.Fatal(err)
	}
}

// AwaitResume is for the child: it returns once the parent resumed it
// (Resume), or its stdin closed.
func AwaitResume() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "resumed" {
			return
		}
	}
}

// Wait waits for the child to exit and fails the test if it failed.
func (c *Child) Wait() {
	c.t.Helper()
	if err := c.cmd.Wait(); err != nil {
		c.t.Fatalf("child: %v", err)
	}
}
