package faultrun

import (
	"errors"
	"net"
	"sync"
	"time"
)

// OutageStats counts what an OutageProxy did.
type OutageStats struct {
	Conns   int64 // connections accepted
	Refused int64 // accepted during a refusing outage and reset at once
	Cut     int64 // live connections reset when a refusing outage began
	Delayed int64 // chunks held back during a delaying outage
}

// OutageProxy is a plain TCP proxy in front of a server (DynamoDB, for the
// cluster run) that can fail on demand: Refuse resets every live
// connection and every new one until Recover; Delay holds every chunk it
// forwards, either way, for a while before writing it on.
type OutageProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	refuse  bool
	latency time.Duration
	conns   map[*outageConn]struct{}
	closed  bool
	stats   OutageStats
	quit    chan struct{} // closed by Close: ends every wait
	wg      sync.WaitGroup
}

// outageConn is one connection through an OutageProxy.
type outageConn struct {
	client, server net.Conn
	once           sync.Once
}

// reset closes both sides with a TCP reset.
func (c *outageConn) reset() {
	c.once.Do(func() {
		resetConn(c.client)
		resetConn(c.server)
	})
}

// resetConn closes conn with a TCP reset rather than a FIN.
func resetConn(conn net.Conn) {
	if tcp, ok := conn.(*net.TCPConn); ok {
		tcp.SetLinger(0)
	}
	conn.Close()
}

// NewOutageProxy listens on a fresh loopback port and forwards every
// connection to target, faithfully until an outage is begun.
func NewOutageProxy(target string) (*OutageProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &OutageProxy{ln: ln, target: target, conns: make(map[*outageConn]struct{}), quit: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address to dial instead of the target.
func (p *OutageProxy) Addr() string { return p.ln.Addr().String() }

// Refuse begins a refusing outage: every live connection is reset, and so
// is every new one until Recover.
func (p *OutageProxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = true
	for c := range p.conns {
		c.reset()
		p.stats.Cut++
	}
}

// Delay begins a delaying outage: until Recover every chunk read, in
// either direction, is held latency before it is written on.
func (p *OutageProxy) Delay(latency time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = latency
}

// Recover ends the outage.
func (p *OutageProxy) Recover() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse, p.latency = false, 0
}

// Stats returns the counts so far.
func (p *OutageProxy) Stats() OutageStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops accepting, closes every connection and waits for them.
func (p *OutageProxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.quit)
	}
	for c := range p.conns {
		c.reset()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *OutageProxy) accept() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.wg.Add(1)
		go p.serve(conn)
	}
}

func (p *OutageProxy) serve(client net.Conn) {
	defer p.wg.Done()
	p.mu.Lock()
	p.stats.Conns++
	refuse := p.refuse || p.closed
	if refuse {
		p.stats.Refused++
	}
	p.mu.Unlock()
	if refuse {
		resetConn(client)
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		client.Close()
		return
	}
	c := &outageConn{client: client, server: server}
	p.mu.Lock()
	if p.refuse || p.closed {
		p.mu.Unlock()
		c.reset()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); p.pump(c, client, server) }()
	go func() { defer pumps.Done(); p.pump(c, server, client) }()
	pumps.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pump copies src to dst, holding each chunk back during a delaying
// outage, until either side ends; then it closes both.
func (p *OutageProxy) pump(c *outageConn, src, dst net.Conn) {
	defer c.once.Do(func() {
		c.client.Close()
		c.server.Close()
	})
	buf := make([]byte, 32<<10)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if !p.hold() {
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if rerr != nil {
			return
		}
	}
}

// hold waits out the current outage's latency, if any; it reports false
// when the proxy closed meanwhile.
func (p *OutageProxy) hold() bool {
	p.mu.Lock()
	latency := p.latency
	if latency > 0 {
		p.stats.Delayed++
	}
	p.mu.Unlock()
	if latency == 0 {
		return true
	}
	t := time.NewTimer(latency)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.quit:
		return false
	}
}
