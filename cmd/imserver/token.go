package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/auth"
)

// token mints a token, or with "revoke" revokes a user's tokens.
func token(args []string) error {
	if len(args) > 0 && args[0] == "revoke" {
		return revokeTokens(args[1:])
	}
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	tools := addToolFlags(fs)
	ttl := fs.Duration("ttl", 30*24*time.Hour, "how long the token is valid")
	maxTTL := fs.Duration("max-token-ttl", 30*24*time.Hour, "the server's maximum lifetime of a token; a longer -ttl is refused")
	fs.Usage = flagUsage(fs, "imserver token [flags] USER   (imserver token revoke [flags] USER revokes USER's tokens)")
	user, help, err := oneArgument(fs, args, "USER")
	if help || err != nil {
		return err
	}
	if *ttl <= 0 {
		return fmt.Errorf("-ttl must be positive")
	}
	if *ttl > *maxTTL {
		return fmt.Errorf("-ttl %v is over the maximum of %v (-max-token-ttl; the server refuses such tokens)", *ttl, *maxTTL)
	}
	if !protocol.ValidUser(user) {
		return fmt.Errorf("%q is not a valid user id", user)
	}
	secret, err := tools.secret()
	if err != nil {
		return err
	}
	st, closeStore, err := tools.open(context.Background(), nil)
	if err != nil {
		return err
	}
	defer closeStore()
	t, err := (&auth.Tokens{Secret: secret, Epochs: st}).Mint(user, time.Now().Add(*ttl))
	if err != nil {
		return err
	}
	fmt.Println(t)
	return nil
}

// revokeTokens makes every token of a user minted so far unauthorized, at
// the next hello and, on a running server, for its live connections too.
func revokeTokens(args []string) error {
	fs := flag.NewFlagSet("token revoke", flag.ContinueOnError)
	tools := addToolFlags(fs)
	fs.Usage = flagUsage(fs, "imserver token revoke [flags] USER")
	user, help, err := oneArgument(fs, args, "USER")
	if help || err != nil {
		return err
	}
	if !protocol.ValidUser(user) {
		return fmt.Errorf("%q is not a valid user id", user)
	}
	st, closeStore, err := tools.open(context.Background(), nil)
	if err != nil {
		return err
	}
	defer closeStore()
	epoch, err := st.RevokeTokens(context.Background(), user)
	if err != nil {
		return err
	}
	fmt.Printf("revoked every token of %s minted so far (token epoch now %d); a running server closes its connections within seconds\n", user, epoch)
	return nil
}
