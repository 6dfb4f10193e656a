package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat. Linux fixes it at
// 100 for user space on every architecture Go supports (sysconf(_SC_CLK_TCK)),
// so the server's CPU time is known to 10 ms: measure windows of seconds.
const userHZ = 100

// procSample is one reading of a process: its CPU time (user + system)
// and its resident set.
type procSample struct {
	CPU    time.Duration
	RSSKiB int64
}

// readProc reads process pid's CPU time and resident set from /proc.
func readProc(pid int) (procSample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, err
	}
	cpu, err := parseStatCPU(stat)
	if err != nil {
		return procSample{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procSample{}, err
	}
	rss, err := parseVmRSS(status)
	if err != nil {
		return procSample{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return procSample{CPU: cpu, RSSKiB: rss}, nil
}

// parseStatCPU returns utime + stime from the text of /proc/PID/stat. The
// command name (field 2) is in parentheses and may hold spaces and
// parentheses itself, so fields are counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name")
	}
	// After ") ": field 3 (state) is the first; utime is field 14, stime 15.
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("only %d fields", len(fields)+2)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		v, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu time %q: %w", f, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// parseVmRSS returns the VmRSS line of /proc/PID/status, in KiB.
func parseVmRSS(status []byte) (int64, error) {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) != 2 || string(fields[1]) != "kB" {
			return 0, fmt.Errorf("VmRSS line %q", bytes.TrimSpace(line))
		}
		return strconv.ParseInt(string(fields[0]), 10, 64)
	}
	return 0, fmt.Errorf("no VmRSS line")
}

// selfCPU is the generator's own CPU time (user + system), exact.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sampler watches the server's process while a workload runs: its CPU
// time at marked moments and its resident set every interval (the
// highest seen is kept). A zero pid watches nothing.
type sampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	maxRSS int64
	err    error
}

// startSampler starts watching pid every interval.
func startSampler(pid int, interval time.Duration) *sampler {
	s := &sampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	if pid == 0 {
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// sample reads the process once and keeps the highest resident set.
func (s *sampler) sample() (procSample, bool) {
	if s.pid == 0 {
		return procSample{}, false
	}
	p, err := readProc(s.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		return procSample{}, false
	}
	s.maxRSS = max(s.maxRSS, p.RSSKiB)
	return p, true
}

// close stops the sampling; it returns the highest resident set seen and
// the first error.
func (s *sampler) close() (maxRSSKiB int64, err error) {
	if s.pid != 0 {
		select {
		case <-s.stop:
		default:
			close(s.stop)
		}
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxRSS, s.err
}
