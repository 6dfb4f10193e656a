package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/imcore/im/server/blob"
)

// progressEvery bounds how often archive prints its progress.
const progressEvery = time.Second

// archive moves the bodies of old messages to cold storage: the embedded
// database's, or (-store dynamodb) the tables'. Like backup it runs beside a running server: it takes no
// data-directory lock, and SQLite (WAL) lets its writes take turns with
// the server's; the server reads the moved bodies back from the same -blob
// (give both the same one).
func archive(args []string) error {
	fs := flag.NewFlagSet("archive", flag.ContinueOnError)
	tools := addToolFlags(fs)
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
	if err := tools.checkEmbedded(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var blobs blob.Store
	spec := tools.storage.blobs.spec
	if tools.storage.scaledOut() {
		if spec == "" {
			return errors.New("-blob (s3://BUCKET, or a directory) must be given with -store dynamodb: where the bodies go")
		}
	} else {
		var err error
		if blobs, spec, err = tools.storage.blobs.open(ctx, *tools.dataDir, tools.storage.region); err != nil {
			return err
		}
	}
	db, closeStore, err := tools.open(ctx, blobs)
	if err != nil {
		return err
	}
	defer closeStore()
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
