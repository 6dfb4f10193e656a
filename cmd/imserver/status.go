package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

// status prints the scaled-out deployment at a glance: the live nodes
// (their heartbeats and relay channels in Redis), their connections and
// readiness, and the health of the services. It reads the services directly,
// so it works with every node down; like migrate it takes a node's
// command line and ignores what is not a store flag.
func status(args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	storage := addStoreFlags(fs)
	redisURL := fs.String("redis", "", "Redis URL of the scaled-out deployment (as the nodes' -redis)")
	format := fs.String("format", "text", "text or json")
	timeout := fs.Duration("timeout", 15*time.Second, "how long reading the status may take")
	fs.Usage = flagUsage(fs, "imserver status [store flags] -redis URL")
	if err := parseFlags(fs, storeArgs(fs, args)); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if err := storage.check(); err != nil {
		return err
	}
	if !storage.scaledOut() {
		return errors.New("status reads a scaled-out deployment (-store dynamodb, -redis URL); an embedded server shows its own on GET /status")
	}
	if *format != "text" && *format != "json" {
		return fmt.Errorf("-format %q: want text or json", *format)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	in, closeServices, err := storage.scaleOut(*redisURL, "").Inspect(ctx)
	if err != nil {
		return err
	}
	defer closeServices()
	st := in.Status(ctx)
	if *format == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(st)
	} else {
		err = st.WriteText(os.Stdout)
	}
	if err != nil {
		return err
	}
	if !st.Healthy() {
		return errors.New("an engine is failing (see above)")
	}
	return nil
}
