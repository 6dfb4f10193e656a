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
	if err := parseFlags(fs, args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("want exactly one DEST")
	}
	start := time.Now()
	if err := sqlitestore.Backup(context.Background(), filepath.Join(*dataDir, server.DatabaseFile), fs.Arg(0)); err != nil {
		return err
	}
	fmt.Printf("backed up %s to %s in %v\n", filepath.Join(*dataDir, server.DatabaseFile), fs.Arg(0), time.Since(start).Round(time.Millisecond))
	return nil
}

// restore puts a backup in place of the database, with the server stopped.
func restore(args []string) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	dataDir := fs.String("data", defaultDataDir(), "data directory of the server (the server must be stopped)")
	fs.Usage = flagUsage(fs, "imserver restore [flags] BACKUP")
	if err := parseFlags(fs, args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("want exactly one BACKUP")
	}
	unlock, err := server.LockDataDir(*dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	path := filepath.Join(*dataDir, server.DatabaseFile)
	id, err := sqlitestore.Restore(context.Background(), fs.Arg(0), path)
	if err != nil {
		return err
	}
	fmt.Printf("restored %s from %s (database %s); start the server to serve it\n", path, fs.Arg(0), id)
	return nil
}
