package netlimit

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/imcore/im/server/clientaddr"
)

// serve accepts on a limited listener and keeps every admitted connection
// open until the test ends, writing "hi\n" to each.
func serve(t *testing.T, cfg Config) (*Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(ln, cfg)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hi\n"))
			go func() {
				buf := make([]byte, 1)
				c.Read(buf) // until the client closes
				c.Close()
			}()
		}
	}()
	return l, ln.Addr().String()
}

// dialFrom connects from a loopback source address and returns the
// connection and its first line.
func dialFrom(t *testing.T, from, addr string) (net.Conn, string) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read from %s: %v", from, err)
	}
	return c, line
}

// waitOpen waits until the listener counts n open connections.
func waitOpen(t *testing.T, l *Listener, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for l.Open() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", l.Open(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPerIPLimitLeavesOtherAddressesIn(t *testing.T) {
	var refused []string
	l, addr := serve(t, Config{MaxConns: 100, MaxPerIP: 2, OnRefuse: func(r string) { refused = append(refused, r) }})
	a1, _ := dialFrom(t, "127.0.0.1", addr)
	dialFrom(t, "127.0.0.1", addr)
	_, line := dialFrom(t, "127.0.0.1", addr)
	if !strings.HasPrefix(line, "HTTP/1.1 503") {
		t.Fatalf("third connection from one IP got %q, want a 503", line)
	}
	// Another address still gets in.
	if _, line := dialFrom(t, "127.0.0.2", addr); line != "hi\n" {
		t.Fatalf("a connection from another IP got %q", line)
	}
	// A place freed is a place again.
	a1.Close()
	waitOpen(t, l, 2)
	if _, line := dialFrom(t, "127.0.0.1", addr); line != "hi\n" {
		t.Fatalf("after one closed, got %q", line)
	}
	if len(refused) != 1 || refused[0] != PerIP {
		t.Fatalf("refusals reported: %v", refused)
	}
}

func TestTotalLimitRefusesCleanly(t *testing.T) {
	l, addr := serve(t, Config{MaxConns: 3})
	for i := range 3 {
		dialFrom(t, "127.0.0."+string(rune('1'+i)), addr)
	}
	if _, line := dialFrom(t, "127.0.0.9", addr); !strings.HasPrefix(line, "HTTP/1.1 503") {
		t.Fatalf("fourth connection got %q, want a 503", line)
	}
	// The refusal is a complete HTTP answer a client can read.
	d := net.Dialer{Timeout: 5 * time.Second}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(raw), nil)
	if err != nil {
		t.Fatalf("reading the refusal: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("refusal: %d %v", resp.StatusCode, resp.Header)
	}
	if l.Open() != 3 {
		t.Fatalf("%d open, want 3", l.Open())
	}
}

func TestDefaultMaxConnsIsBelowTheFDLimit(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	n := DefaultMaxConns()
	if uint64(n) >= lim.Cur || uint64(n)+128 > lim.Cur {
		t.Fatalf("DefaultMaxConns() = %d with a descriptor limit of %d: want a reserve of at least 128", n, lim.Cur)
	}
}

func TestPenalizedAddressIsTurnedAway(t *testing.T) {
	var refused []string
	_, addr := serve(t, Config{MaxConns: 100, Penalized: func(ip string) bool { return ip == "127.0.0.3" },
		OnRefuse: func(r string) { refused = append(refused, r) }})
	if _, line := dialFrom(t, "127.0.0.3", addr); !strings.HasPrefix(line, "HTTP/1.1 429") {
		t.Fatalf("a penalized address got %q, want a 429", line)
	}
	if _, line := dialFrom(t, "127.0.0.4", addr); line != "hi\n" {
		t.Fatalf("another address got %q", line)
	}
	if len(refused) != 1 || refused[0] != Penalty {
		t.Fatalf("refusals reported: %v", refused)
	}
}

func TestTrustedProxiesAreExemptFromPerAddressBounds(t *testing.T) {
	proxies, _ := clientaddr.ParseProxies([]string{"127.0.0.5"})
	_, addr := serve(t, Config{MaxConns: 100, MaxPerIP: 1, Proxies: proxies, Penalized: func(string) bool { return true }})
	// The proxy holds many connections, and is never penalized itself.
	for range 3 {
		if _, line := dialFrom(t, "127.0.0.5", addr); line != "hi\n" {
			t.Fatalf("a trusted proxy got %q", line)
		}
	}
	if _, line := dialFrom(t, "127.0.0.6", addr); !strings.HasPrefix(line, "HTTP/1.1 429") {
		t.Fatalf("a penalized direct client got %q", line)
	}
}
