package faultrun

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// serverArgs are the arguments of every imserver the run starts: the one
// place to add a flag (a new limit the load must not trip, say). The rate
// limit is lifted: a client catching up after a cut sends in bursts.
func serverArgs(addr, dataDir string) []string {
	return []string{
		"serve",
		"-listen", addr,
		"-data", dataDir,
		"-rate", "100000",
		"-rate-burst", "100000",
	}
}

// startTimeout bounds the wait for a started server to listen.
const startTimeout = 30 * time.Second

// FreeLoopbackAddr returns a loopback address with a port that was free a
// moment ago, for a server that must come back on the same address.
func FreeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Server runs the real imserver binary on a fixed address and data
// directory, and kills and restarts it.
type Server struct {
	bin, addr, dataDir string
	id                 string   // a cluster node's -node-id
	logPath            string   // "": no log file
	pprofAddr          string   // its profiler's address ("": none)
	extraArgs          []string // after serverArgs: a cluster node's store flags
	env                []string // the process's environment (nil: this one's)

	// up is set while the process started last listens and is not being
	// stopped; read without waiting for a start or a stop in progress.
	up atomic.Bool

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
	logs   *logRing
	faults *logRing // the warnings and errors among logs, kept longer
	starts int
}

// NewServer returns a server of binary bin that will listen on addr and
// keep its data in dataDir; Start starts it.
func NewServer(bin, addr, dataDir string) *Server {
	return &Server{bin: bin, addr: addr, dataDir: dataDir, logs: newLogRing(200), faults: newLogRing(200)}
}

// newNode returns a server like NewServer's, named id, that also gets
// extraArgs and runs with the environment env.
func newNode(bin, addr, dataDir, id string, extraArgs, env []string) *Server {
	s := NewServer(bin, addr, dataDir)
	s.id, s.extraArgs, s.env = id, extraArgs, env
	return s
}

// Name returns the server's node id and address ("imserver on" the
// address for a server without an id), for the log.
func (s *Server) Name() string {
	if s.id == "" {
		return "imserver on " + s.addr
	}
	return s.id + " on " + s.addr
}

// Up reports whether the server is listening, as far as the harness knows
// (false from the moment a kill or stop begins), without waiting for a
// start or a stop in progress.
func (s *Server) Up() bool { return s.up.Load() }

// Addr returns the server's address.
func (s *Server) Addr() string { return s.addr }

// Starts returns how many times the server was started.
func (s *Server) Starts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts
}

// Logs returns the server's last log lines, over every start.
func (s *Server) Logs() string { return s.logs.String() }

// Faults returns the server's last warnings and errors, over every start.
func (s *Server) Faults() string { return s.faults.String() }

// isFault reports whether a log line is a warning or an error.
func isFault(line string) bool {
	return strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN")
}

var listeningLine = regexp.MustCompile(`msg=listening addr=(\S+)`)

// Run starts the server and returns once it listens.
func (s *Server) Run() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("server already running")
	}
	cmd := exec.Command(s.bin, append(serverArgs(s.addr, s.dataDir), s.extraArgs...)...)
	cmd.Env = s.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	logFile, err := s.openLogFile()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	s.starts++
	s.logs.add(fmt.Sprintf("--- start %d", s.starts))
	fmt.Fprintf(logFile, "--- start %d\n", s.starts)
	listening := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			s.logs.add(sc.Text())
			fmt.Fprintln(logFile, sc.Text())
			if isFault(sc.Text()) {
				s.faults.add(sc.Text())
			}
			if listeningLine.MatchString(sc.Text()) {
				once.Do(func() {
					s.up.Store(true)
					close(listening)
				})
			}
		}
		cmd.Wait()
		s.up.Store(false)
		close(exited)
	}()
	select {
	case <-listening:
		s.cmd, s.done = cmd, exited
		return nil
	case <-exited:
		return fmt.Errorf("imserver exited before listening: %v\n%s", cmd.ProcessState, s.logs)
	case <-time.After(startTimeout):
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("imserver did not listen within %v\n%s", startTimeout, s.logs)
	}
}

// openLogFile opens the server's log file for appending; with no file
// it returns one that writes nowhere.
func (s *Server) openLogFile() (io.WriteCloser, error) {
	if s.logPath == "" {
		return nopCloser{io.Discard}, nil
	}
	return os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Alive reports whether the server started last is still running.
func (s *Server) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Pause stops the server with SIGSTOP: its sockets stay open and it
// answers nothing until Resume.
func (s *Server) Pause() error { return s.send(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.send(syscall.SIGCONT) }

// send sends sig to the running server without waiting for anything.
func (s *Server) send(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("%s is not running", s.Name())
	}
	return s.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL to the server and waits for it to exit.
func (s *Server) Kill() error {
	_, _, err := s.signal(syscall.SIGKILL)
	return err
}

// stopTimeout bounds a graceful stop: imserver's -shutdown-grace (15 s)
// and a margin.
const stopTimeout = 30 * time.Second

// quitWait is how long a server that did not stop gets to write its
// goroutines after SIGQUIT before it is killed.
const quitWait = 3 * time.Second

// errGraceRanOut says imserver stopped at the end of its -shutdown-grace
// with requests still in flight.
var errGraceRanOut = errors.New("the shutdown grace ran out")

// Stop asks the server to shut down (SIGTERM) and waits for it to exit.
// The error says it did not stop cleanly: it ran out of its shutdown
// grace (errGraceRanOut), exited with another failure, or had to be
// killed after stopTimeout.
func (s *Server) Stop() error {
	state, timedOut, err := s.signal(syscall.SIGTERM)
	switch {
	case err != nil:
		return err
	case state == nil:
		return nil
	case timedOut:
		return fmt.Errorf("%s did not stop within %v of SIGTERM: %v", s.Name(), stopTimeout, state)
	case state.ExitCode() != 0 && strings.HasSuffix(lastLine(s.Logs()), "context deadline exceeded"):
		return fmt.Errorf("%s: %w: %s", s.Name(), errGraceRanOut, lastLine(s.Logs()))
	case state.ExitCode() != 0:
		return fmt.Errorf("%s stopped with %v: %s", s.Name(), state, lastLine(s.Logs()))
	}
	return nil
}

// signal sends sig to the server and waits up to stopTimeout for it to
// exit, then has it write its goroutines and kills it; it returns how the
// process ended (nil: it was not running) and whether it had to be
// stopped so.
func (s *Server) signal(sig os.Signal) (state *os.ProcessState, timedOut bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil, false, nil
	}
	s.up.Store(false)
	if err := s.cmd.Process.Signal(sig); err != nil {
		return nil, false, err
	}
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		timedOut = true
		// SIGQUIT first: the Go runtime writes every goroutine's stack
		// to the log (-logs keeps it whole), which says what it waited on.
		s.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-s.done:
		case <-time.After(quitWait):
			s.cmd.Process.Kill()
			<-s.done
		}
	}
	state = s.cmd.ProcessState
	s.cmd, s.done = nil, nil
	return state, timedOut, nil
}

// wipe empties the data directory of the stopped server.
func (s *Server) wipe() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("wipe: the server is running")
	}
	if err := os.RemoveAll(s.dataDir); err != nil {
		return err
	}
	return os.MkdirAll(s.dataDir, 0o700)
}

// logRing keeps the last lines of a log.
type logRing struct {
	mu    sync.Mutex
	lines []string
	next  int
	full  bool
}

func newLogRing(n int) *logRing { return &logRing{lines: make([]string, n)} }

func (r *logRing) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines[r.next] = line
	r.next = (r.next + 1) % len(r.lines)
	r.full = r.full || r.next == 0
}

func (r *logRing) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.lines[:r.next]
	if r.full {
		out = append(append([]string{}, r.lines[r.next:]...), r.lines[:r.next]...)
	}
	return strings.Join(out, "\n")
}
