package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/imcore/im/server"
	"github.com/imcore/im/server/store/sqlitestore"
)

// backup writes a consistent copy of the database while the server runs.
func backup(args []string) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	dataDir := fs.String("data", defaultDataDir(), "data directory of the server")
	fs.Usage = flagUsage(fs, "imserver backup [flags] DEST   (DEST must not exist)")
	dest, help, err := oneArgument(fs, args, "DEST")
	if help || err != nil {
		return err
	}
	start := time.Now()
	db := filepath.Join(*dataDir, server.DatabaseFile)
	if err := sqlitestore.Backup(context.Background(), db, dest); err != nil {
		return err
	}
	fmt.Printf("backed up %s to %s in %v\n", db, dest, time.Since(start).Round(time.Millisecond))
	return nil
}

// restore puts a backup in place of the database, with the server stopped.
func restore(args []string) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	dataDir := fs.String("data", defaultDataDir(), "data directory of the server (the server must be stopped)")
	fs.Usage = flagUsage(fs, "imserver restore [flags] BACKUP")
	src, help, err := oneArgument(fs, args, "BACKUP")
	if help || err != nil {
		return err
	}
	unlock, err := server.LockDataDir(*dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	path := filepath.Join(*dataDir, server.DatabaseFile)
	id, kept, err := sqlitestore.Restore(context.Background(), src, path)
	if err != nil {
		return err
	}
	fmt.Printf("restored %s from %s (database %s); start the server to serve it\n", path, src, id)
	if kept != "" {
		fmt.Printf("the database it replaced is kept as %s (remove it once the restore is confirmed)\n", kept)
	}
	return nil
}
