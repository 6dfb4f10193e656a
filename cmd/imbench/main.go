// Command imbench is imserver's load generator: dm, group, catchup, idle,
// sync and echo workloads over raw WebSocket connections speaking the
// protocol, bounded in time and count, reporting a table and one line of
// JSON. Run imbench -h for every workload and flag.
//
// Two side commands run beside a workload in scripts/bench-cluster.sh:
// `imbench proxy` (a TCP proxy adding a round trip's delay to every
// request to an client) and `imbench settle` (waits until the nodes named
// hold their shards as placement says); each takes -h.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// realMain runs the command and returns its exit status: 0, 1 when the
// run failed or had more errors than -max-errors, 2 for a bad command line.
func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if h, ok := sideCommands[args[0]]; ok {
			return h(args[1:], stdout, stderr)
		}
	}
	cfg, err := parseConfig(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "imbench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	progress := func(format string, args ...any) {
		if !cfg.Quiet {
			fmt.Fprintf(stderr, "imbench %s: %s\n", cfg.Workload, fmt.Sprintf(format, args...))
		}
	}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(stderr, "imbench: -cpuprofile:", err)
			return 1
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	rep, runErr := run(ctx, cfg, progress)
	if err := output(cfg, rep, stdout); err != nil {
		fmt.Fprintln(stderr, "imbench:", err)
		return 1
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "imbench:", runErr)
		return 1
	}
	if rep.Errors.Total > cfg.MaxErrors {
		fmt.Fprintf(stderr, "imbench: %d errors (more than -max-errors %d)\n", rep.Errors.Total, cfg.MaxErrors)
		return 1
	}
	return 0
}

// output writes the table and the JSON line, and appends the line to
// -json's file.
func output(cfg *Config, rep *Report, stdout io.Writer) error {
	if err := rep.writeTable(stdout); err != nil {
		return err
	}
	var line strings.Builder
	if err := rep.writeJSON(&line); err != nil {
		return err
	}
	if _, err := io.WriteString(stdout, line.String()); err != nil {
		return err
	}
	if cfg.JSONFile == "" {
		return nil
	}
	f, err := os.OpenFile(cfg.JSONFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, line.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// run runs the configured workload, after the echo, and returns its
// report; a failed run still returns what it measured, with the error.
func run(ctx context.Context, cfg *Config, progress func(string, ...any)) (*Report, error) {
	r := &Report{Workload: cfg.Workload, RunID: cfg.RunID, Server: cfg.Server}
	errs := newErrorLog()
	var err error
	if cfg.Workload == "echo" || cfg.Echo > 0 {
		length := cfg.Echo
		if cfg.Workload == "echo" {
			length = cfg.Duration
		}
		progress("echo for %v", length)
		r.Echo, err = runEcho(ctx, cfg.EchoConns, cfg.EchoWindow, length, cfg.EchoCount, strings.Repeat("x", cfg.BodyBytes))
		if err != nil {
			errs.add("echo", err.Error())
		}
	}
	if err == nil {
		switch cfg.Workload {
		case "dm", "group":
			err = runConvLoad(ctx, cfg, errs, r, progress)
		case "catchup":
			err = runCatchup(ctx, cfg, errs, r, progress)
		case "idle":
			err = runIdle(ctx, cfg, errs, r, progress)
		case "sync":
			err = runSync(ctx, cfg, errs, r, progress)
		case "presence":
			err = runPresence(ctx, cfg, errs, r, progress)
		case "echo":
			if e := r.Echo; e != nil {
				r.WindowS = e.Seconds
				r.Rates.set("round_trips_per_s", e.RoundTripsPerS)
				r.Latency.set("rtt", e.RTT)
				r.Values.set("echo_cpu_us_per_rt", e.CPUMicrosPerRT)
			}
		}
	}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("interrupted: %w", err)
	}
	r.Errors.ByKind, r.Errors.Total, r.Errors.First = errs.snapshot()
	r.ratios()
	return r, err
}
