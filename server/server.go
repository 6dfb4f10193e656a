// Package server is the composition root of imserver: it opens the store,
// builds the domain and the gateway, and serves /ws and /healthz.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/gateway"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/sqlitestore"
	"github.com/imcore/im/server/userlock"
)

// Auth modes.
const (
	AuthDev   = "dev"   // the hello names its user; loopback only
	AuthToken = "token" // an HMAC-signed token names the user
)

// DatabaseFile is the name of the embedded database in the data directory.
const DatabaseFile = "im.db"

// Config is everything a server needs to run.
type Config struct {
	DataDir string
	Auth    string // AuthDev or AuthToken
	// AllowRemoteDev lets a dev-auth server listen beyond loopback. Anyone
	// who can reach it can then speak as any user.
	AllowRemoteDev bool
	Gateway        gateway.Config
	Logger         *slog.Logger
	// Now is the clock for server timestamps; time.Now when nil. Tests use
	// it to move time (mute expiry) or step it back.
	Now func() time.Time
}

// Server is a running imserver.
type Server struct {
	cfg   Config
	log   *slog.Logger
	store *sqlitestore.Store
	hub   *hub.Hub
	gw    *gateway.Gateway
	http  *http.Server
	ready atomic.Bool
}

// New opens the data directory and builds a server ready to Serve.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var authn auth.Authenticator
	switch cfg.Auth {
	case "", AuthDev:
		cfg.Auth = AuthDev
		authn = auth.Dev{}
	case AuthToken:
		secret, err := auth.LoadOrCreateSecret(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		authn = &auth.Tokens{Secret: secret}
	default:
		return nil, fmt.Errorf("unknown auth mode %q (want %q or %q)", cfg.Auth, AuthDev, AuthToken)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	st, err := sqlitestore.Open(filepath.Join(cfg.DataDir, DatabaseFile), sqlitestore.Options{Now: cfg.Now})
	if err != nil {
		return nil, err
	}
	h := hub.New()
	svc := chat.New(st, h, userlock.NewLocal(), cfg.Gateway.Limits, cfg.Logger)
	s := &Server{
		cfg:   cfg,
		log:   cfg.Logger,
		store: st,
		hub:   h,
		gw:    gateway.New(cfg.Gateway, svc, h, authn, cfg.Logger),
	}
	mux := http.NewServeMux()
	mux.Handle("GET /ws", s.gw)
	mux.HandleFunc("GET /healthz", s.healthz)
	s.http = &http.Server{Handler: mux, ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)}
	return s, nil
}

// Serve accepts connections on ln until Shutdown. A dev-auth server refuses
// a listener beyond loopback unless AllowRemoteDev is set.
func (s *Server) Serve(ln net.Listener) error {
	if s.cfg.Auth == AuthDev && !s.cfg.AllowRemoteDev && !IsLoopback(ln.Addr()) {
		return fmt.Errorf("dev auth trusts the user named in hello, so it only listens on loopback, not %s; use -auth token, or -dev-allow-remote to accept the risk", ln.Addr())
	}
	s.ready.Store(true)
	s.log.Info("listening", "addr", ln.Addr().String(), "auth", s.cfg.Auth, "data", s.cfg.DataDir)
	err := s.http.Serve(gateway.CorkListener(ln))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, closes every connection with "going away",
// lets requests in flight finish and the last commits reach the disk.
func (s *Server) Shutdown(ctx context.Context) error {
	s.ready.Store(false)
	errHTTP := s.http.Shutdown(ctx)
	errGW := s.gw.Shutdown(ctx)
	errStore := s.store.Close()
	return errors.Join(errHTTP, errGW, errStore)
}

// Store returns the server's store, for tests and tools that inspect it.
func (s *Server) Store() store.Store { return s.store }

// OnlineDevices returns how many devices are connected.
func (s *Server) OnlineDevices() int { return s.hub.Count() }

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		http.Error(w, "starting or stopping", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintln(w, "ok")
}

// IsLoopback reports whether addr is a loopback address.
func IsLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
