package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// dialTCP opens a raw TCP connection from ip.
func dialTCP(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitClosedByServer reads from c until the server closes it, failing the
// test if that has not happened by deadline.
func waitClosedByServer(t *testing.T, c net.Conn, deadline time.Time) {
	t.Helper()
	c.SetReadDeadline(deadline)
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server kept a connection open past %v", deadline.Format("15:04:05.000"))
	}
}

// Connections that never get to a hello — silent, sending their headers a
// byte at a time, or an upgrade without its final CRLF — are closed by
// the hello timeout, which counts from the accept.
func TestAttackIdleSlowlorisAndHalfUpgrades(t *testing.T) {
	const helloTimeout = 2 * time.Second
	p := startServer(t, "-data", t.TempDir(), "-hello-timeout", helloTimeout.String())
	const each = 200
	var conns []net.Conn
	var opened time.Time
	baselineThenAttack(t, p.addr, fmt.Sprintf("%d idle, %d slowloris and %d half-upgrade connections", each, each, each), 2*time.Second, func(stop <-chan struct{}) {
		opened = time.Now()
		var slow []net.Conn
		for range each {
			conns = append(conns, dialTCP(t, "127.0.0.3", p.addr)) // silent
			c := dialTCP(t, "127.0.0.4", p.addr)
			c.Write([]byte("GET /ws HTTP/1.1\r\nHost: x\r\n"))
			slow = append(slow, c)
			conns = append(conns, c)
			half := dialTCP(t, "127.0.0.5", p.addr)
			half.Write([]byte("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"))
			conns = append(conns, half)
		}
		// Slowloris: one more header byte per connection every 100ms.
		// (The bystander's phase lasts longer than the hello timeout, so
		// the closes happen during it.)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				for _, c := range slow {
					c.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
					c.Write([]byte("X"))
				}
			}
		}
	})
	deadline := opened.Add(helloTimeout + 5*time.Second)
	var last time.Time
	for _, c := range conns {
		waitClosedByServer(t, c, deadline)
		last = time.Now() // the connections are read in the order they were opened
	}
	t.Logf("all %d connections were closed by the server; the last %v after the first was opened (hello timeout %v)", len(conns), last.Sub(opened).Round(time.Millisecond), helloTimeout)
}

// One address holding its maximum of connections does not keep anyone
// else out: its next connection is refused with a 503, others connect.
func TestAttackOneAddressAtItsMaximum(t *testing.T) {
	const perIP = 100
	p := startServer(t, "-data", t.TempDir(), "-max-conns-per-ip", fmt.Sprint(perIP))
	var held []*wsClient
	baselineThenAttack(t, p.addr, fmt.Sprintf("one address holding %d authenticated connections", perIP), 2*time.Second, func(stop <-chan struct{}) {
		for i := range perIP {
			c, err := dialHelloFrom(p.addr, "127.0.0.3", fmt.Sprintf("mallory%d", i), "d")
			if err != nil {
				t.Errorf("connection %d of %d: %v", i+1, perIP, err)
				return
			}
			held = append(held, c)
		}
		<-stop
	})
	defer func() {
		for _, c := range held {
			c.ws.Close()
		}
	}()
	c := dialTCP(t, "127.0.0.3", p.addr)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("connection %d from the full address: %v %v, want a 503", perIP+1, resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "too many connections from 127.0.0.3") {
		t.Errorf("the 503 says %q", body)
	}
	if _, err := dialHelloFrom(p.addr, "127.0.0.9", "newcomer", "d"); err != nil {
		t.Fatalf("a newcomer from another address: %v", err)
	}
}

// Near its file-descriptor limit the server refuses connections with a
// 503 instead of failing accept: it never logs "too many open files",
// connected clients keep working, and a freed place is a place again.
func TestAttackNearTheDescriptorLimit(t *testing.T) {
	p := startServerUnder(t, "ulimit -n 320", "-data", t.TempDir())
	b := newBystander(t, p.addr)
	var (
		mu       sync.Mutex
		accepted []*wsClient
		refused  int
	)
	during := latencies{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; refused < 20 && i < 1000; i++ {
			c, err := dialHelloFrom(p.addr, fmt.Sprintf("127.0.1.%d", 1+i/100), fmt.Sprintf("mallory%d", i), "d")
			mu.Lock()
			if err != nil {
				if !strings.Contains(err.Error(), "bad handshake") {
					t.Errorf("connection %d failed otherwise than refused: %v", i, err)
				}
				refused++
			} else {
				accepted = append(accepted, c)
			}
			mu.Unlock()
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			during = append(during, b.measure(200*time.Millisecond)...)
		}
	}
	t.Logf("with a descriptor limit of 320: %d connections accepted, %d refused with a 503; bystander during: %v", len(accepted), refused, during)
	if len(accepted) < 100 || refused == 0 {
		t.Fatalf("%d accepted, %d refused: want the process's maximum accepted, the rest refused", len(accepted), refused)
	}
	for _, c := range accepted[:10] {
		c.ws.Close()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := dialHelloFrom(p.addr, "127.0.0.9", "newcomer", "d")
		if err == nil {
			c.ws.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new connection after freeing 10 places: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // the server sees the closes soon after
	}
	for _, c := range accepted[10:] {
		c.ws.Close()
	}
	if strings.Contains(p.logs.String(), "too many open files") {
		t.Fatalf("the server ran out of descriptors:\n%s", p.logs)
	}
}
