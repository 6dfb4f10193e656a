// Package tcpproxy is a plain TCP proxy on loopback that can fail on
// demand: refuse every connection for a while, or delay what it forwards
// as a slow network would. The cluster fault run puts one in front of
// DynamoDB for its outages; scripts/bench-cluster.sh (through imbench
// proxy) puts one there to give every DynamoDB call a region's round trip.
package tcpproxy

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Stats counts what a Proxy did.
type Stats struct {
	Conns   int64 // connections accepted
	Refused int64 // accepted while refusing and reset at once
	Cut     int64 // live connections reset when a refusal began
	Delayed int64 // chunks forwarded late while a delay was on
}

// Proxy forwards every connection it accepts to a target, faithfully
// until told otherwise: Refuse resets every live connection and every new
// one until Recover; Delay makes every byte, either way, reach the other
// side a fixed time after the proxy read it, until Recover.
//
// A delay is a delay line, as a long cable is, not a pause per chunk:
// each chunk read is stamped with the time it is due and written then,
// behind the chunks read before it. So a request's round trip gains twice
// the delay whatever the number of chunks it and its answer are read in,
// and requests following each other on one connection are each late by
// that much, not by the sum of the delays before them.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	refuse  bool
	latency time.Duration
	conns   map[*proxyConn]struct{}
	closed  bool
	stats   Stats
	quit    chan struct{} // closed by Close: ends every wait
	wg      sync.WaitGroup
}

// proxyConn is one connection through a Proxy.
type proxyConn struct {
	client, server net.Conn
	once           sync.Once
}

// reset closes both sides with a TCP reset.
func (c *proxyConn) reset() {
	c.once.Do(func() {
		resetConn(c.client)
		resetConn(c.server)
	})
}

// close closes both sides.
func (c *proxyConn) close() {
	c.once.Do(func() {
		c.client.Close()
		c.server.Close()
	})
}

// resetConn closes conn with a TCP reset rather than a FIN.
func resetConn(conn net.Conn) {
	if tcp, ok := conn.(*net.TCPConn); ok {
		tcp.SetLinger(0)
	}
	conn.Close()
}

// New listens on a fresh loopback port and forwards every connection to
// target (host:port).
func New(target string) (*Proxy, error) { return Listen("127.0.0.1:0", target) }

// Listen is New on a given address (host:port; port 0 picks one).
func Listen(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: make(map[*proxyConn]struct{}), quit: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address to dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Refuse begins a refusal: every live connection is reset, and so is
// every new one until Recover.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = true
	for c := range p.conns {
		c.reset()
		p.stats.Cut++
	}
}

// Delay makes every chunk read from then on, in either direction, reach
// the other side latency after it was read, until Recover: a round trip
// through the proxy gains 2 × latency.
func (p *Proxy) Delay(latency time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = latency
}

// Recover ends a refusal or a delay (chunks already stamped still go out
// at their time).
func (p *Proxy) Recover() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse, p.latency = false, 0
}

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops accepting, closes every connection and waits for them.
func (p *Proxy) Close() error {
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

func (p *Proxy) accept() {
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

func (p *Proxy) serve(client net.Conn) {
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
	c := &proxyConn{client: client, server: server}
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

// chunk is what one read got, and when it is due on the other side.
type chunk struct {
	data []byte
	due  time.Time
}

// pump copies src to dst through a delay line until either side ends;
// then, once what it read is written, it closes both. Its reader stamps
// each chunk with its due time as it reads it; its writer writes the
// chunks in order, each once it is due.
func (p *Proxy) pump(c *proxyConn, src, dst net.Conn) {
	line := make(chan chunk, 256)
	written := make(chan struct{})
	go func() {
		defer close(written)
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for ch := range line {
			if wait := time.Until(ch.due); wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-p.quit:
					c.close()
					return
				}
			}
			if _, err := dst.Write(ch.data); err != nil {
				c.close()
				return
			}
		}
	}()
	defer func() {
		close(line)
		<-written
		c.close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			ch := chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.currentLatency())}
			select {
			case line <- ch:
			case <-written: // the writer gave up: dst is gone
				return
			}
		}
		if rerr != nil {
			return
		}
	}
}

// currentLatency returns the delay of a chunk read now, and counts it
// when there is one.
func (p *Proxy) currentLatency() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.latency > 0 {
		p.stats.Delayed++
	}
	return p.latency
}
