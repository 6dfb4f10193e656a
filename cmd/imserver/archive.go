package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/imcore/im/server"
	"github.com/imcore/im/server/store/sqlitestore"
)

// progressEvery bounds how often archive prints its progress.
const progressEvery = time.Second

// archive moves the bodies of old messages of the embedded database to
// cold storage. Like backup it runs beside a running server: it takes no
// data-directory lock, and SQLite (WAL) lets its writes take turns with
// the server's; the server reads the moved bodies back from the same -blob
// (give both the same one).
func archive(args []string) error {
	fs := flag.NewFlagSet("archive", flag.ContinueOnError)
	dataDir := fs.String("data", defaultDataDir(), "data directory of the server")
	blobs := addBlobFlags(fs)
	region := fs.String("region", "", "AWS region of the -blob bucket (AWS_REGION or the shared config when empty)")
	var olderThan age
	fs.Var(&olderThan, "older-than", `move the bodies of messages older than this: whole days ("90d") or a duration ("2160h"); required`)
	fs.Usage = flagUsage(fs, "imserver archive -older-than 90d [flags]")
	if err := parseFlags(fs, args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if olderThan <= 0 {
		fs.Usage()
		return errors.New("-older-than must be given, and positive")
	}
	dbPath := filepath.Join(*dataDir, server.DatabaseFile)
	if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no database at %s: is -data the server's data directory?", dbPath)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, spec, err := blobs.open(ctx, *dataDir, *region)
	if err != nil {
		return err
	}
	db, err := sqlitestore.Open(dbPath, sqlitestore.Options{Blobs: st})
	if err != nil {
		return err
	}
	defer db.Close()
	cutoff := time.Now().Add(-time.Duration(olderThan))
	fmt.Printf("archiving to %s the bodies of messages older than %s (before %s)\n", spec, olderThan.String(), cutoff.UTC().Format(time.RFC3339))
	start := time.Now()
	var said time.Time
	moved, err := db.Archive(ctx, cutoff.UnixMilli(), func(n int) {
		if time.Since(said) >= progressEvery {
			fmt.Printf("moved %d so far\n", n)
			said = time.Now()
		}
	})
	if err != nil {
		return fmt.Errorf("after moving %d: %w", moved, err)
	}
	fmt.Printf("archived %d message bodies in %v\n", moved, time.Since(start).Round(time.Millisecond))
	return nil
}
