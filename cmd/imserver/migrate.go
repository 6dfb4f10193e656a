package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// migrate creates the tables (and the bucket) of the scaled-out deployment
// that are missing. It takes the store flags and ignores the rest, so a
// node's environment can run it as is.
func migrate(args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	storage := addStoreFlags(fs)
	timeout := fs.Duration("timeout", 2*time.Minute, "how long creating the tables may take")
	fs.Usage = flagUsage(fs, "imserver migrate [store flags]")
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
		fmt.Println("the embedded store (-store sqlite) migrates itself when the server starts: nothing to do")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	created, err := storage.scaleOut("", "").Migrate(ctx)
	for _, name := range created {
		fmt.Println("created", name)
	}
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if len(created) == 0 {
		fmt.Fprintln(os.Stdout, "every table exists: nothing to do")
	}
	return nil
}

// storeArgs keeps of args the flags fs knows (with their values), so that
// a command taking only the store flags can be run with a node's whole
// command line. Another command's flag is dropped with its value when the
// value is given apart (a word that does not start with "-").
func storeArgs(fs *flag.FlagSet, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, _, inline := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if name == "h" || name == "help" {
			out = append(out, arg)
			continue
		}
		f := fs.Lookup(name)
		separate := !inline && i+1 < len(args)
		if f == nil {
			if separate && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
			continue
		}
		out = append(out, arg)
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); separate && (!ok || !bf.IsBoolFlag()) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}
