package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/imcore/im/server"
	"github.com/imcore/im/server/gateway"
)

// shutdownGrace bounds a graceful shutdown.
const shutdownGrace = 15 * time.Second

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:7070", "address to listen on")
	dataDir := fs.String("data", defaultDataDir(), "data directory (database, token secret)")
	authMode := fs.String("auth", server.AuthDev, `"dev" (the hello names the user; loopback only) or "token"`)
	allowRemote := fs.Bool("dev-allow-remote", false, "let a dev-auth server listen beyond loopback (anyone reaching it can act as any user)")
	gw := gateway.DefaultConfig()
	fs.Int64Var(&gw.MaxFrame, "max-frame", gw.MaxFrame, "largest frame in bytes; larger closes the connection with 1009")
	fs.IntVar(&gw.Limits.MaxBody, "max-body", gw.Limits.MaxBody, "largest message body in bytes")
	fs.IntVar(&gw.Limits.MaxGroupSize, "max-group-size", gw.Limits.MaxGroupSize, "most members a group may have, its creator included")
	fs.IntVar(&gw.Limits.MaxTitle, "max-title", gw.Limits.MaxTitle, "longest group title in characters")
	fs.IntVar(&gw.QueueLen, "queue", gw.QueueLen, "frames queued per connection before a slow client is disconnected")
	rateLimit := fs.Float64("rate", float64(gw.RateLimit), "frames per second one connection may send")
	fs.IntVar(&gw.RateBurst, "rate-burst", gw.RateBurst, "frames one connection may send in a burst")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json")
	fs.Usage = flagUsage(fs, "imserver [serve] [flags]")
	if err := parseFlags(fs, args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	gw.RateLimit = rate.Limit(*rateLimit)
	if gw.Limits.MaxBody < 1 || gw.Limits.MaxGroupSize < 1 || gw.Limits.MaxTitle < 1 {
		return fmt.Errorf("-max-body, -max-group-size and -max-title must be at least 1")
	}
	logger, err := newLogger(*logLevel, *logFormat)
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{
		DataDir:        *dataDir,
		Auth:           *authMode,
		AllowRemoteDev: *allowRemote,
		Gateway:        gw,
		Logger:         logger,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		srv.Shutdown(context.Background())
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		srv.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

func newLogger(level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", format)
}
