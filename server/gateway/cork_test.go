package gateway

import (
	"bytes"
	"net"
	"testing"
)

// countingConn records each Write that reaches the network.
type countingConn struct {
	net.Conn
	writes [][]byte
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, append([]byte(nil), p...))
	return len(p), nil
}

func TestCorkedWritesLeaveAsOne(t *testing.T) {
	under := &countingConn{}
	c := &corkConn{Conn: under}
	c.cork()
	for _, frame := range []string{"one", "two", "three"} {
		if n, err := c.Write([]byte(frame)); err != nil || n != len(frame) {
			t.Fatalf("Write(%q) = %d, %v", frame, n, err)
		}
	}
	if len(under.writes) != 0 {
		t.Fatalf("%d writes reached the network while corked", len(under.writes))
	}
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	if len(under.writes) != 1 || !bytes.Equal(under.writes[0], []byte("onetwothree")) {
		t.Fatalf("network saw %q, want one write of all three", under.writes)
	}
	// Uncorked, writes go straight through.
	c.Write([]byte("four"))
	if len(under.writes) != 2 {
		t.Fatalf("uncorked write was held back")
	}
}

func TestCorkFlushesWhenLarge(t *testing.T) {
	under := &countingConn{}
	c := &corkConn{Conn: under}
	c.cork()
	c.Write(make([]byte, corkFlushAt))
	if len(under.writes) != 1 {
		t.Fatalf("a corked buffer of %d bytes was not flushed", corkFlushAt)
	}
	c.Write([]byte("x"))
	c.uncork()
	if len(under.writes) != 2 {
		t.Fatalf("got %d writes, want 2", len(under.writes))
	}
}
