package faultrun

import (
	"errors"
	"math"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// CutPolicy says how the proxy cuts the connections it carries while
// chaos is on. Each new connection draws a plan: with probability
// HandshakeCut a byte budget counted from its first byte (most such cuts
// fall inside the HTTP upgrade); with probability BudgetCut a byte budget
// counted from the end of the upgrade, log-uniform between 1 and MaxBytes;
// either in one direction chosen at random. A budget cut forwards exactly
// the budget, usually part of a frame, then closes both sides. Every
// connection also gets a lifetime, uniform up to MaxLife, at which it is
// cut abruptly if its budget has not run out (half of these cuts close
// with a TCP reset).
type CutPolicy struct {
	HandshakeCut float64
	BudgetCut    float64
	MaxBytes     int64
	MaxLife      time.Duration
}

// DefaultCutPolicy cuts one connection in twenty during the upgrade and
// most of the others after up to 64 KiB in one direction, and none lives
// longer than a second.
var DefaultCutPolicy = CutPolicy{HandshakeCut: 0.05, BudgetCut: 0.75, MaxBytes: 64 << 10, MaxLife: time.Second}

// ProxyStats counts what the proxy did. Cuts counts connections the proxy
// ended on purpose; MidFrame those of them whose last forwarded bytes, in
// either direction, ended inside a WebSocket frame (the peer got a partial
// frame, then the end of the stream); Handshake those cut inside the HTTP
// upgrade.
type ProxyStats struct {
	Conns      int64 // connections accepted
	Refused    int64 // accepted while the server could not be reached
	Cuts       int64
	BudgetCuts int64 // after a byte budget
	TimedCuts  int64 // at a random time
	MidFrame   int64
	Handshake  int64
	Resets     int64 // cuts that closed with a TCP reset instead of a FIN
	// Withheld counts the text messages read from the server that never
	// reached their client whole: a cut came first (or, rarely, the
	// client had gone).
	Withheld int64
}

// Proxy is a loopback TCP proxy in front of the server that cuts
// connections at random points while chaos is on. It follows the
// WebSocket framing of both directions to count mid-frame cuts, and hands
// every complete text message it reads from the server to a tap, whether
// or not a cut then keeps it from the client.
type Proxy struct {
	ln      net.Listener
	targets func() []string // the addresses a new connection may go to
	next    atomic.Uint64   // round-robin over targets
	policy  CutPolicy
	tap     func(payload []byte)
	chaos   atomic.Bool
	plans   func() cutPlan // draws each connection's plan

	rngMu sync.Mutex
	rng   *rand.Rand

	mu     sync.Mutex
	conns  map[*proxyConn]struct{}
	closed bool
	stats  ProxyStats
	wg     sync.WaitGroup
}

// NewProxy listens on a fresh loopback port and forwards every connection
// to target. tap, if not nil, receives each complete text message read
// from the server, forwarded or not (on the connection's goroutine; it
// must not keep the slice).
func NewProxy(target string, policy CutPolicy, seed uint64, tap func([]byte)) (*Proxy, error) {
	return newProxy(func() []string { return []string{target} }, policy, seed, tap, nil)
}

// NewBalancingProxy is NewProxy in front of several servers: each new
// connection goes to the next, round-robin, of the addresses targets
// returns at that moment (the servers that are up); none is a refused
// connection.
func NewBalancingProxy(targets func() []string, policy CutPolicy, seed uint64, tap func([]byte)) (*Proxy, error) {
	return newProxy(targets, policy, seed, tap, nil)
}

// newProxy is NewBalancingProxy with the plans of the connections drawn by
// plans (nil: at random, by the policy).
func newProxy(targets func() []string, policy CutPolicy, seed uint64, tap func([]byte), plans func() cutPlan) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		ln: ln, targets: targets, policy: policy, tap: tap,
		rng:   rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		conns: make(map[*proxyConn]struct{}),
	}
	p.plans = plans
	if plans == nil {
		p.plans = p.draw
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetChaos turns cutting on or off. Off, budgets and timers of live
// connections no longer cut either.
func (p *Proxy) SetChaos(on bool) { p.chaos.Store(on) }

// Stats returns the counts so far.
func (p *Proxy) Stats() ProxyStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops accepting, closes every connection and waits for them.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.closed = true
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
		conn, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			conn.Close()
			return
		}
		p.stats.Conns++
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(conn)
	}
}

// cutPlan is how one connection will be cut: after budget bytes in
// direction dir (budget < 0: no budget), counted from the first byte or
// from the end of the upgrade, or at life, whichever comes first.
type cutPlan struct {
	dir         int // 0: client to server, 1: server to client
	budget      int64
	fromUpgrade bool
	life        time.Duration
	reset       bool // close with a TCP reset rather than a FIN
}

// draw picks a plan for a new connection.
func (p *Proxy) draw() cutPlan {
	p.rngMu.Lock()
	defer p.rngMu.Unlock()
	plan := cutPlan{dir: p.rng.IntN(2), budget: -1}
	switch r := p.rng.Float64(); {
	case r < p.policy.HandshakeCut:
		plan.budget = 1 + p.rng.Int64N(320)
	case r < p.policy.HandshakeCut+p.policy.BudgetCut:
		plan.fromUpgrade = true
		plan.budget = int64(math.Exp(p.rng.Float64() * math.Log(float64(p.policy.MaxBytes))))
	}
	plan.life = time.Duration(1 + p.rng.Int64N(int64(p.policy.MaxLife)))
	plan.reset = p.rng.IntN(2) == 0
	return plan
}

// Why a proxied connection ended.
const (
	endNatural = iota + 1 // one side closed or failed
	endBudget             // the byte budget ran out
	endTimed              // the timer fired
	endClosed             // the proxy closed
)

// proxyConn is one proxied connection.
type proxyConn struct {
	client, server net.Conn
	plan           cutPlan
	streams        [2]*wsStream // what was forwarded; 0: client to server, 1: server to client
	fromServer     *wsStream    // what was read from the server, forwarded or not: the tap's
	once           sync.Once
	why            int
}

// end closes both sides once, recording why; a reset plan closes with
// SO_LINGER 0 so that the peers see a reset, not a FIN.
func (c *proxyConn) end(why int) {
	c.once.Do(func() {
		c.why = why
		if c.plan.reset && why == endTimed {
			for _, conn := range []net.Conn{c.client, c.server} {
				if tcp, ok := conn.(*net.TCPConn); ok {
					tcp.SetLinger(0)
				}
			}
		}
		c.client.Close()
		c.server.Close()
	})
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := p.dialTarget()
	if err != nil {
		client.Close()
		p.mu.Lock()
		p.stats.Refused++
		p.mu.Unlock()
		return
	}
	c := &proxyConn{client: client, server: server, plan: p.plans()}
	c.streams[0], c.streams[1] = &wsStream{}, &wsStream{}
	c.fromServer = &wsStream{onText: p.tap}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()

	timer := time.AfterFunc(c.plan.life, func() {
		if p.chaos.Load() {
			c.end(endTimed)
		}
	})
	defer timer.Stop()
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); p.pump(c, 0, client, server) }()
	go func() { defer pumps.Done(); p.pump(c, 1, server, client) }()
	pumps.Wait()

	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	p.stats.Withheld += c.fromServer.messages - c.streams[1].messages
	if c.why != endBudget && c.why != endTimed {
		return
	}
	p.stats.Cuts++
	if c.why == endBudget {
		p.stats.BudgetCuts++
	} else {
		p.stats.TimedCuts++
	}
	if c.plan.reset && c.why == endTimed {
		p.stats.Resets++
	}
	if c.streams[0].inHandshake() || c.streams[1].inHandshake() {
		p.stats.Handshake++
	}
	// A reset may discard bytes still in flight, so only a cut that closed
	// with a FIN is known to have left the peer a partial frame.
	if !(c.plan.reset && c.why == endTimed) && (c.streams[0].midFrame() || c.streams[1].midFrame()) {
		p.stats.MidFrame++
	}
}

// dialTarget connects to the next target, round-robin.
func (p *Proxy) dialTarget() (net.Conn, error) {
	addrs := p.targets()
	if len(addrs) == 0 {
		return nil, errors.New("no server is up")
	}
	addr := addrs[(p.next.Add(1)-1)%uint64(len(addrs))]
	return net.DialTimeout("tcp", addr, 2*time.Second)
}

// pump copies one direction of c until it ends, feeding what was
// forwarded to the direction's stream and cutting at the plan's budget.
func (p *Proxy) pump(c *proxyConn, dir int, src, dst net.Conn) {
	defer c.end(endNatural)
	stream := c.streams[dir]
	budgeted := c.plan.dir == dir && c.plan.budget >= 0
	var counted int64 // bytes counted against the budget
	buf := make([]byte, 32<<10)
	for {
		n, rerr := src.Read(buf)
		chunk := buf[:n]
		if dir == 1 {
			c.fromServer.feed(chunk)
		}
		cut := false
		if budgeted && n > 0 && p.chaos.Load() {
			// Bytes of the upgrade do not count when the budget is
			// counted from its end.
			counting := chunk
			if c.plan.fromUpgrade {
				counting = chunk[stream.upgradeBytes(chunk):]
			}
			if left := c.plan.budget - counted; int64(len(counting)) >= left {
				chunk = chunk[:len(chunk)-len(counting)+int(left)]
				cut = true
			}
			counted += int64(len(counting))
		}
		if len(chunk) > 0 {
			w, werr := dst.Write(chunk)
			stream.feed(chunk[:w])
			if werr != nil {
				return
			}
		}
		if cut {
			c.end(endBudget)
			return
		}
		if rerr != nil {
			return
		}
	}
}
