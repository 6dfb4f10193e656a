package tcpproxy

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// testWait bounds every wait of these tests.
const testWait = 10 * time.Second

// tcpServer accepts connections on a loopback port until the test ends
// and hands each to serve, on a goroutine of its own; it returns the
// address.
func tcpServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(conn)
		}
	}()
	return ln.Addr().String()
}

// echoServer accepts connections on a loopback port and echoes them.
func echoServer(t *testing.T) string {
	return tcpServer(t, func(conn net.Conn) {
		defer conn.Close()
		io.Copy(conn, conn)
	})
}

// echoProxy starts a proxy in front of an echo server, closed when the
// test ends.
func echoProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// roundTrip writes msg on conn and reads it back.
func roundTrip(conn net.Conn, msg string) error {
	conn.SetDeadline(time.Now().Add(testWait))
	if _, err := conn.Write([]byte(msg)); err != nil {
		return err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, buf); err != nil {
		return err
	}
	if string(buf) != msg {
		return errors.New("echoed " + string(buf))
	}
	return nil
}

func dialOrFail(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// dialAndRoundTrip dials addr and makes a round trip on the connection;
// the error is the dial's or the round trip's.
func dialAndRoundTrip(addr, msg string) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	return roundTrip(conn, msg)
}

func TestRefusesThenRecovers(t *testing.T) {
	p := echoProxy(t)
	live := dialOrFail(t, p.Addr())
	if err := roundTrip(live, "before"); err != nil {
		t.Fatalf("before the outage: %v", err)
	}

	p.Refuse()
	// The live connection was reset: reading it ends in an error, not a
	// timeout.
	live.SetReadDeadline(time.Now().Add(testWait))
	if _, err := live.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a live connection read %v during a refusal, want it reset", err)
	}
	if err := dialAndRoundTrip(p.Addr(), "during"); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a new connection got %v during a refusal, want it reset", err)
	}
	if s := p.Stats(); s.ResetLive != 1 || s.Refused != 1 {
		t.Errorf("stats %+v, want 1 live connection reset and 1 refused", s)
	}

	p.Recover()
	if err := roundTrip(dialOrFail(t, p.Addr()), "after"); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
}

func TestDelaysButDelivers(t *testing.T) {
	p := echoProxy(t)
	conn := dialOrFail(t, p.Addr())
	p.Delay(10 * time.Millisecond)
	if err := roundTrip(conn, "slow"); err != nil {
		t.Fatalf("during a delaying outage: %v", err)
	}
	// The request and its echo were each held once at least.
	if s := p.Stats(); s.Delayed < 2 || s.ResetLive != 0 || s.Refused != 0 {
		t.Errorf("stats %+v, want 2 chunks delayed at least and nothing cut", s)
	}
	p.Recover()
	before := p.Stats().Delayed
	if err := roundTrip(conn, "fast"); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
	if s := p.Stats(); s.Delayed != before {
		t.Errorf("%d chunks delayed after the outage ended", s.Delayed-before)
	}
}

// TestDelayIsPerRoundTripNotPerChunk writes one message in several chunks
// and has several messages in flight at once: each round trip gains twice
// the delay, however many chunks it took and however many came before it.
func TestDelayIsPerRoundTripNotPerChunk(t *testing.T) {
	// Long enough that a loaded machine's scheduling delays stay well
	// inside the margin between the two behaviours: held chunk by chunk,
	// either case below would take 5 delays or more.
	const latency = 100 * time.Millisecond
	const bound = 2*latency + 250*time.Millisecond
	p := echoProxy(t)
	conn := dialOrFail(t, p.Addr())
	p.Delay(latency)
	conn.SetDeadline(time.Now().Add(testWait))

	// One message in 5 chunks, 5 ms apart (no Nagle: each is a segment).
	// Held chunk by chunk, its echo would come 5 delays late at least.
	const pieces = 5
	for i := range pieces {
		if i > 0 {
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := conn.Write([]byte{'a' + byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	last := time.Now()
	buf := make([]byte, pieces)
	if _, err := io.ReadFull(conn, buf); err != nil {
		t.Fatal(err)
	}
	took := time.Since(last)
	if string(buf) != "abcde" {
		t.Fatalf("echoed %q", buf)
	}
	if took < 2*latency || took > bound {
		t.Errorf("the last chunk's echo took %v, want about %v (twice the delay)", took, 2*latency)
	}

	// Ten messages written back to back: the last one's echo is as late
	// as the first's, not ten delays late.
	start := time.Now()
	for i := range 10 {
		if _, err := conn.Write([]byte{'0' + byte(i)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	buf = make([]byte, 10)
	if _, err := io.ReadFull(conn, buf); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*latency || took > bound {
		t.Errorf("ten messages in flight took %v, want about %v", took, 2*latency)
	}
}
