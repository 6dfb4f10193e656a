// Package netlimit bounds the TCP connections a server holds: in all
// (below the process's file-descriptor limit) and from one IP address, and
// turns away addresses the server has penalized. A connection over a limit
// is accepted and at once answered with an HTTP 503 (429 for a penalty)
// and closed, so the listen queue never fills and accept never fails for
// want of descriptors: every other client can still connect.
package netlimit

import (
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/imcore/im/server/clientaddr"
)

// Config says how many connections a Listener holds.
type Config struct {
	// MaxConns bounds the connections open at once; 0 means DefaultMaxConns.
	MaxConns int
	// MaxPerIP bounds the connections open at once from one address (as
	// clientaddr.Key counts it: an IPv6 /64 is one); 0 means no bound.
	MaxPerIP int
	// Proxies are trusted reverse proxies: their connections carry many
	// clients', so neither MaxPerIP nor Penalized applies to them (the
	// gateway applies the penalty to the clients they forward for).
	Proxies clientaddr.Proxies
	// Penalized, when set, says whether an address (its key) is refused
	// for now (it misbehaved); its connections are answered 429 at once,
	// before anything of theirs is read.
	Penalized func(key string) bool
	// OnRefuse, when set, is told of each refused connection: PerIP,
	// Total or Penalty.
	OnRefuse func(reason string)
}

// Reasons a connection is refused.
const (
	PerIP   = "per_ip"
	Total   = "max_conns"
	Penalty = "penalty"
)

// refuseWriteTimeout bounds the write of the 503 to a refused connection.
const refuseWriteTimeout = 100 * time.Millisecond

// Listener is a net.Listener that keeps its Config's bounds.
type Listener struct {
	net.Listener
	cfg Config

	mu    sync.Mutex
	open  int
	perIP map[string]int
}

// Listen wraps l.
func Listen(l net.Listener, cfg Config) *Listener {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns()
	}
	return &Listener{Listener: l, cfg: cfg, perIP: make(map[string]int)}
}

// MaxConns returns the bound in effect on all connections.
func (l *Listener) MaxConns() int { return l.cfg.MaxConns }

// Open returns the connections open now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Accept returns the next connection within the bounds, refusing those
// over them.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := clientaddr.OfConn(c)
		key := clientaddr.Key(ip)
		proxy := l.cfg.Proxies.Contains(ip)
		if proxy {
			key = "" // counted in the total only
		}
		if !proxy && l.cfg.Penalized != nil && l.cfg.Penalized(key) {
			l.refuse(c, key, Penalty)
			continue
		}
		if reason := l.admit(key); reason != "" {
			l.refuse(c, key, reason)
			continue
		}
		return &conn{Conn: c, l: l, key: key}, nil
	}
}

// admit counts a new connection from the address key ("" for a trusted
// proxy, counted in the total only), or returns why it is refused.
func (l *Listener) admit(key string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.cfg.MaxConns {
		return Total
	}
	if key != "" && l.cfg.MaxPerIP > 0 && l.perIP[key] >= l.cfg.MaxPerIP {
		return PerIP
	}
	l.open++
	if key != "" {
		l.perIP[key]++
	}
	return ""
}

func (l *Listener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if key == "" {
		return
	}
	if l.perIP[key]--; l.perIP[key] <= 0 {
		delete(l.perIP, key)
	}
}

// refuse answers a connection over a bound with a 503 and closes it.
func (l *Listener) refuse(c net.Conn, key, reason string) {
	if l.cfg.OnRefuse != nil {
		l.cfg.OnRefuse(reason)
	}
	status := "503 Service Unavailable"
	text := fmt.Sprintf("too many connections: this server holds at most %d\n", l.cfg.MaxConns)
	switch reason {
	case PerIP:
		text = fmt.Sprintf("too many connections from %s: at most %d from one address\n", key, l.cfg.MaxPerIP)
	case Penalty:
		status, text = "429 Too Many Requests", fmt.Sprintf("too many failed connections from %s; slow down\n", key)
	}
	c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", status, len(text), text)
	c.Close()
}

// conn releases its place once closed.
type conn struct {
	net.Conn
	l    *Listener
	key  string
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key) })
	return err
}

// DefaultMaxConns is the bound on connections that keeps the process clear
// of its file-descriptor limit: the limit less a reserve for the database,
// logs and the like (128 descriptors and 1% of the limit).
func DefaultMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 1000
	}
	soft := min(lim.Cur, 1<<30)
	reserve := 128 + soft/100
	if soft <= reserve+16 {
		return 16
	}
	return int(soft - reserve)
}
