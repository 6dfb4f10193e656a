package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// The attack tests run the real binary, attack it as the issue's
// reproductions did, and check that the attack is contained. Each also
// measures a bystander — an unrelated user sending in a conversation of its
// own, one message at a time — before and during the attack, and logs both
// latencies (they are reported, never asserted: the machine is shared).

// dialerFrom dials from a loopback source address, so that tests can be
// several clients of different IPs (127.0.0.0/8 is all loopback).
func dialerFrom(ip string) *websocket.Dialer {
	return &websocket.Dialer{
		NetDial: func(network, addr string) (net.Conn, error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
			return d.Dial(network, addr)
		},
		HandshakeTimeout: 10 * time.Second,
	}
}

// dialHelloFrom is dialHello from a given source IP; it returns an error
// instead of failing, for connections that may be refused.
func dialHelloFrom(addr, ip, user, device string) (*wsClient, error) {
	ws, _, err := dialerFrom(ip).Dial("ws://"+addr+"/ws", nil)
	if err != nil {
		return nil, err
	}
	c := &wsClient{ws: ws}
	if _, err := c.request(&protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: 1, User: user, Device: device}, "h"); err != nil {
		ws.Close()
		return nil, err
	}
	return c, nil
}

// latencies are one phase's send→sent times.
type latencies []time.Duration

func (l latencies) String() string {
	if len(l) == 0 {
		return "no sends"
	}
	s := slices.Clone(l)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return fmt.Sprintf("%d sends, p50 %v, p99 %v, max %v", len(s), q(0.50).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond), s[len(s)-1].Round(10*time.Microsecond))
}

// bystander is an unrelated user sending in a conversation of its own.
type bystander struct {
	t    *testing.T
	c    *wsClient
	conv string
	n    int
}

// newBystander connects a bystander from its own address, 127.0.0.2.
func newBystander(t *testing.T, addr string) *bystander {
	t.Helper()
	c, err := dialHelloFrom(addr, "127.0.0.2", "bystander", "phone")
	if err != nil {
		t.Fatalf("bystander: %v", err)
	}
	t.Cleanup(func() { c.ws.Close() })
	return &bystander{t: t, c: c, conv: "d:bystander:friend"}
}

// bystanderPace is how often the bystander sends: a hundred a second,
// half its frame rate, so that its own limit never slows it.
const bystanderPace = 10 * time.Millisecond

// measure sends one message every bystanderPace (or after the previous
// answer, if that is later) for d and returns the latencies. Every send
// must succeed: the attack must not lock the bystander out.
func (b *bystander) measure(d time.Duration) latencies {
	b.t.Helper()
	var out latencies
	tick := time.NewTicker(bystanderPace)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
		b.n++
		id := "b" + strconv.Itoa(b.n)
		start := time.Now()
		f, err := b.c.request(&protocol.Send{Ref: protocol.Ref{ID: id}, Conv: b.conv, MsgID: id, Body: "still here", ClientTS: 1}, id)
		if err != nil {
			b.t.Fatalf("the bystander's send %d failed during the attack: %v", b.n, err)
		}
		if _, ok := f.(*protocol.Sent); !ok {
			b.t.Fatalf("the bystander's send %d: %T", b.n, f)
		}
		out = append(out, time.Since(start))
	}
	return out
}

// baselineThenAttack measures the bystander for a second, runs attack in
// the background, measures for the attack's duration, stops it, and logs
// both phases under name.
func baselineThenAttack(t *testing.T, addr, name string, d time.Duration, attack func(stop <-chan struct{})) (before, during latencies) {
	t.Helper()
	b := newBystander(t, addr)
	before = b.measure(time.Second)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		attack(stop)
	}()
	during = b.measure(d)
	close(stop)
	<-done
	t.Logf("bystander send→sent, %s: before %v; during %v", name, before, during)
	return before, during
}

// rssWatch samples a process's resident memory until stopped and keeps the
// highest reading.
type rssWatch struct {
	pid  int
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak int64
}

func watchRSS(pid int) *rssWatch {
	w := &rssWatch{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if kb, err := rssKB(pid); err == nil {
				w.mu.Lock()
				w.peak = max(w.peak, kb)
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// end stops the watch and returns the peak in KiB.
func (w *rssWatch) end() int64 {
	close(w.stop)
	<-w.done
	return w.peak
}

// rssKB reads VmRSS of a process from /proc.
func rssKB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS for %d", pid)
}

// seedMessages stores n messages of body from user in conv, acknowledged.
func seedMessages(t *testing.T, addr, user, conv string, n int, body string) {
	t.Helper()
	c := dialHello(t, addr, user, "seeder")
	defer c.ws.Close()
	for i := range n {
		id := fmt.Sprintf("seed%d", i)
		if _, err := c.request(&protocol.Send{Ref: protocol.Ref{ID: id}, Conv: conv, MsgID: id, Body: body, ClientTS: 1}, id); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
}

// cpuTime reads the CPU time a process has used (user and system).
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond, nil
}

// cpuShare measures the share of one core a process uses while fn runs.
func cpuShare(t *testing.T, pid int, fn func()) float64 {
	t.Helper()
	before, err := cpuTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	fn()
	after, err := cpuTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	return float64(after-before) / float64(time.Since(start))
}

// serverMetrics scrapes a running server's /metrics into sample → value
// (a sample is its name and labels as written).
func serverMetrics(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}
