package gateway

import (
	"net"
	"sync"
)

// CorkListener wraps l so that each connection's writer can "cork" it:
// frames written while corked are gathered and sent with one write when
// uncorked, so a burst of queued frames costs one system call.
func CorkListener(l net.Listener) net.Listener { return corkListener{l} }

type corkListener struct{ net.Listener }

func (l corkListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &corkConn{Conn: c}, nil
}

// corkFlushAt bounds what a corked connection gathers before writing anyway.
const corkFlushAt = 64 << 10

// corkConn is a net.Conn whose writes can be gathered.
type corkConn struct {
	net.Conn
	mu     sync.Mutex
	corked bool
	buf    []byte
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		return c.Conn.Write(p)
	}
	c.buf = append(c.buf, p...)
	if len(c.buf) >= corkFlushAt {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork writes what was gathered and returns the write's error.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	return c.flushLocked()
}

func (c *corkConn) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > 4*corkFlushAt {
		c.buf = nil // do not keep a large buffer for an idle connection
	} else {
		c.buf = c.buf[:0]
	}
	return err
}
