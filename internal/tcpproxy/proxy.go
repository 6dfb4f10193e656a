// Package tcpproxy is a TCP proxy on loopback that fails on demand, for
// tests and benchmarks. It can refuse every connection for a while, delay
// what it forwards as a slow network would, and cut connections at random
// points: after a byte budget in one direction, inside the HTTP upgrade,
// at a random time, with a FIN or a TCP reset. A proxy that cuts follows
// the WebSocket framing of both directions, to count the cuts that left a
// peer a partial frame, and can hand every text message the target wrote
// to a tap. The fault run puts one in front of its servers (the cuts) and
// one in front of DynamoDB (the outages); scripts/bench-cluster.sh,
// through imbench proxy, puts one in front of DynamoDB to give every call
// a region's round trip.
package tcpproxy

import (
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Config says where a Proxy listens, what it forwards to and how it
// fails. Only Target (or Targets) is required.
type Config struct {
	// Addr is where to listen (host:port, port 0 picks one); "" is a
	// free loopback port.
	Addr string
	// Target is the address every connection is forwarded to.
	Target string
	// Targets, set instead of Target, returns the addresses a new
	// connection may go to at that moment (the servers that are up): each
	// goes to the next of them, round-robin; none is an unreachable
	// target.
	Targets func() []string
	// Cuts is how connections are cut while chaos is on. The connections
	// of a proxy that cuts, or taps, are taken for WebSocket connections:
	// it follows their upgrade and framing.
	Cuts CutPolicy
	// Seed seeds the draws of the connections' cut plans.
	Seed uint64
	// Tap, if not nil, receives each complete WebSocket text message read
	// from the target, forwarded or not (on the connection's goroutine; it
	// must not keep the slice).
	Tap func(payload []byte)

	// plans, if not nil, gives every connection its plan instead of
	// drawing it by Cuts.
	plans func() cutPlan
}

// Stats counts what a Proxy did.
type Stats struct {
	Conns       int64 // connections accepted
	Refused     int64 // accepted during a refusal and reset at once
	Unreachable int64 // accepted while no target could be reached, and closed
	ResetLive   int64 // live connections reset when a refusal began
	Delayed     int64 // chunks forwarded late while a delay was on

	// Cuts counts the connections a cut plan ended while chaos was on:
	// BudgetCuts after a byte budget, TimedCuts at a random time, Resets
	// those of the timed ones that closed with a TCP reset instead of a
	// FIN. MidFrame counts the cuts whose last forwarded bytes, in either
	// direction, ended inside a WebSocket frame (the peer got a partial
	// frame, then the end of the stream); Handshake those that ended
	// inside the HTTP upgrade.
	Cuts, BudgetCuts, TimedCuts, Resets int64
	MidFrame, Handshake                 int64
	// Withheld counts the text messages read from the target that never
	// reached the client whole: a cut came first (or the client had
	// gone).
	Withheld int64
}

// Proxy forwards every connection it accepts to a target, faithfully
// until told otherwise. Refuse resets every live connection and every new
// one until Recover. Delay makes every byte, either way, reach the other
// side a fixed time after the proxy read it, until Recover. SetChaos(true)
// cuts the connections by the Config's CutPolicy until SetChaos(false).
//
// A delay is a delay line, as a long cable is, not a pause per chunk:
// each chunk read is stamped with the time it is due and written then,
// behind the chunks read before it. So a request's round trip gains twice
// the delay whatever the number of chunks it and its answer are read in,
// and requests following each other on one connection are each late by
// that much, not by the sum of the delays before them.
type Proxy struct {
	ln      net.Listener
	cfg     Config
	targets func() []string
	next    atomic.Uint64  // round-robin over targets
	plans   func() cutPlan // nil: no cuts
	follow  bool           // follow the WebSocket framing
	chaos   atomic.Bool

	rngMu sync.Mutex
	rng   *rand.Rand

	mu      sync.Mutex
	refuse  bool
	latency time.Duration
	conns   map[*conn]struct{}
	closed  bool
	stats   Stats
	quit    chan struct{} // closed by Close: ends every wait
	wg      sync.WaitGroup
}

// New listens on a fresh loopback port and forwards every connection to
// target (host:port).
func New(target string) (*Proxy, error) { return Start(Config{Target: target}) }

// Listen is New on a given address (host:port; port 0 picks one).
func Listen(addr, target string) (*Proxy, error) {
	return Start(Config{Addr: addr, Target: target})
}

// Start listens and forwards as cfg says.
func Start(cfg Config) (*Proxy, error) {
	targets := cfg.Targets
	if targets == nil {
		if cfg.Target == "" {
			return nil, errors.New("tcpproxy: no target")
		}
		targets = func() []string { return []string{cfg.Target} }
	}
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		ln: ln, cfg: cfg, targets: targets,
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
		conns: make(map[*conn]struct{}),
		quit:  make(chan struct{}),
	}
	switch {
	case cfg.plans != nil:
		p.plans = cfg.plans
	case cfg.Cuts != CutPolicy{}:
		p.plans = p.draw
	}
	p.follow = p.plans != nil || cfg.Tap != nil
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
		c.end(endRefused)
		p.stats.ResetLive++
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

// SetChaos turns cutting on or off. Off, budgets and lifetimes of live
// connections no longer cut either.
func (p *Proxy) SetChaos(on bool) { p.chaos.Store(on) }

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
		c.end(endClosed)
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			client.Close()
			return
		}
		p.stats.Conns++
		if p.refuse {
			p.stats.Refused++
			p.mu.Unlock()
			resetConn(client)
			continue
		}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(client)
	}
}

// Why a proxied connection ended.
const (
	endNatural = iota + 1 // one side closed or failed
	endBudget             // the byte budget ran out
	endTimed              // the lifetime ran out
	endRefused            // a refusal began
	endClosed             // the proxy closed
)

// conn is one proxied connection.
type conn struct {
	client, server net.Conn
	plan           cutPlan
	// With the framing followed: what was forwarded each way (0: client
	// to target, 1: target to client), and what was read each way,
	// forwarded or not (1 feeds the tap).
	forwarded, read [2]*wsStream
	once            sync.Once
	why             int
}

// end closes both sides once, recording why; a refusal, and a timed cut
// whose plan says so, close with SO_LINGER 0 so that the peers see a
// reset, not a FIN.
func (c *conn) end(why int) {
	c.once.Do(func() {
		c.why = why
		if why == endRefused || (why == endTimed && c.plan.reset) {
			resetConn(c.client)
			resetConn(c.server)
			return
		}
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

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := p.dialTarget()
	if err != nil {
		client.Close()
		p.mu.Lock()
		p.stats.Unreachable++
		p.mu.Unlock()
		return
	}
	c := &conn{client: client, server: server, plan: noCut}
	if p.plans != nil {
		c.plan = p.plans()
	}
	if p.follow {
		c.forwarded = [2]*wsStream{{}, {}}
		c.read = [2]*wsStream{{}, {onText: p.cfg.Tap}}
	}
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		c.end(endClosed)
		return
	case p.refuse:
		p.stats.Refused++
		p.mu.Unlock()
		c.end(endRefused)
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()

	if c.plan.life > 0 {
		timer := time.AfterFunc(c.plan.life, func() {
			if p.chaos.Load() {
				c.end(endTimed)
			}
		})
		defer timer.Stop()
	}
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); p.pump(c, 0, client, server) }()
	go func() { defer pumps.Done(); p.pump(c, 1, server, client) }()
	pumps.Wait()

	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	p.count(c)
}

// count adds what ended c to the stats; p.mu is held.
func (p *Proxy) count(c *conn) {
	if !p.follow {
		return
	}
	p.stats.Withheld += c.read[1].messages - c.forwarded[1].messages
	if c.why != endBudget && c.why != endTimed {
		return
	}
	p.stats.Cuts++
	if c.why == endBudget {
		p.stats.BudgetCuts++
	} else {
		p.stats.TimedCuts++
	}
	reset := c.why == endTimed && c.plan.reset
	if reset {
		p.stats.Resets++
	}
	if c.forwarded[0].inHandshake() || c.forwarded[1].inHandshake() {
		p.stats.Handshake++
	}
	// A reset may discard bytes still in flight, so only a cut that closed
	// with a FIN is known to have left the peer a partial frame.
	if !reset && (c.forwarded[0].midFrame() || c.forwarded[1].midFrame()) {
		p.stats.MidFrame++
	}
}

// dialTarget connects to the next target, round-robin.
func (p *Proxy) dialTarget() (net.Conn, error) {
	addrs := p.targets()
	if len(addrs) == 0 {
		return nil, errors.New("no target is up")
	}
	addr := addrs[(p.next.Add(1)-1)%uint64(len(addrs))]
	return net.DialTimeout("tcp", addr, 2*time.Second)
}

// chunk is what one read got (up to the budget), and when it is due on
// the other side.
type chunk struct {
	data []byte
	due  time.Time
	cut  bool // the budget ran out with it: end the connection once it is written
}

// pump copies direction dir of c, src to dst, through a delay line until
// either side ends or the plan's budget runs out; then, once what it read
// is written, it ends c. Its reader stamps each chunk with its due time
// and cuts it at the budget; its writer writes the chunks in order, each
// once it is due, and follows what it forwarded.
func (p *Proxy) pump(c *conn, dir int, src, dst net.Conn) {
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
					c.end(endClosed)
					return
				}
			}
			w, err := dst.Write(ch.data)
			if p.follow {
				c.forwarded[dir].feed(ch.data[:w])
			}
			if err != nil {
				c.end(endNatural)
				return
			}
			if ch.cut {
				c.end(endBudget)
				return
			}
		}
	}()
	defer func() {
		close(line)
		<-written
		c.end(endNatural)
	}()
	budgeted := c.plan.dir == dir && c.plan.budget >= 0
	var counted int64 // bytes counted against the budget
	buf := make([]byte, 32<<10)
	for {
		n, rerr := src.Read(buf)
		data := buf[:n]
		cut := false
		if budgeted && n > 0 && p.chaos.Load() {
			// Bytes of the upgrade do not count when the budget is
			// counted from its end.
			counting := data
			if c.plan.fromUpgrade {
				counting = data[c.read[dir].upgradeBytes(data):]
			}
			if left := c.plan.budget - counted; int64(len(counting)) >= left {
				data = data[:len(data)-len(counting)+int(left)]
				cut = true
			}
			counted += int64(len(counting))
		}
		if p.follow {
			c.read[dir].feed(buf[:n])
		}
		if len(data) > 0 || cut {
			ch := chunk{data: append([]byte(nil), data...), due: time.Now(), cut: cut}
			if len(data) > 0 {
				ch.due = ch.due.Add(p.currentLatency())
			}
			select {
			case line <- ch:
			case <-written: // the writer gave up: dst is gone
				return
			}
		}
		if cut || rerr != nil {
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
