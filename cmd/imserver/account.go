package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/imcore/im/protocol"
)

// account files an account's conversations, for the other member, under a
// category and/or a sub-business.
func account(args []string) error {
	if len(args) == 0 || args[0] != "set" {
		return fmt.Errorf(`usage: imserver account set [flags] USER (see "imserver account set -help")`)
	}
	fs := flag.NewFlagSet("account set", flag.ContinueOnError)
	tools := addToolFlags(fs)
	category := fs.String("category", "", `category (folder) the account's conversations go in, "" for none`)
	subBiz := fs.String("sub-biz", "", `sub-business whose nested list the account's conversations go in, "" for the main list`)
	fs.Usage = flagUsage(fs, "imserver account set [flags] USER  (or: imserver account set USER [flags])")
	// USER may come before the flags or after them.
	rest := args[1:]
	var user string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		user, rest = rest[0], rest[1:]
	}
	if err := parseFlags(fs, rest); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if user == "" && fs.NArg() == 1 {
		user = fs.Arg(0)
	} else if user == "" || fs.NArg() != 0 {
		fs.Usage()
		return fmt.Errorf("want exactly one USER")
	}
	if !protocol.ValidUser(user) {
		return fmt.Errorf("%q is not a valid user id", user)
	}
	for name, v := range map[string]string{"-category": *category, "-sub-biz": *subBiz} {
		if v != "" && !protocol.ValidUser(v) {
			return fmt.Errorf("%s %q: want 1-32 characters of [a-z0-9_.-]", name, v)
		}
	}
	// Filing accounts before the server's first start is fine: the data
	// directory is made as serve would make it.
	st, closeStore, err := tools.open(context.Background(), nil)
	if err != nil {
		return err
	}
	defer closeStore()
	if err := st.SetAccount(context.Background(), user, *category, *subBiz); err != nil {
		return err
	}
	fmt.Printf("%s: category %q, sub-business %q (applies to conversations started from now on)\n", user, *category, *subBiz)
	return nil
}
