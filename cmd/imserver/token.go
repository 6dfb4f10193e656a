package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/imcore/im/server/auth"
)

func token(args []string) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	dataDir := fs.String("data", defaultDataDir(), "data directory of the server (holds the signing secret)")
	ttl := fs.Duration("ttl", 30*24*time.Hour, "how long the token is valid")
	fs.Usage = flagUsage(fs, "imserver token [flags] USER")
	if err := parseFlags(fs, args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("want exactly one USER")
	}
	if *ttl <= 0 {
		return fmt.Errorf("-ttl must be positive")
	}
	secret, err := auth.LoadOrCreateSecret(*dataDir)
	if err != nil {
		return err
	}
	t, err := (&auth.Tokens{Secret: secret}).Mint(fs.Arg(0), time.Now().Add(*ttl))
	if err != nil {
		return err
	}
	fmt.Println(t)
	return nil
}
