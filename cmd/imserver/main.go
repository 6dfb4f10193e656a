// Command imserver is the chat server. With no setup it serves on
// 127.0.0.1:7070 with its data in a local directory; see -help.
package main

import (
	"fmt"
	"os"
)

const usage = `imserver — the chat server

Usage:
  imserver [serve] [flags]          run the server (the default)
  imserver token [flags] USER       mint a login token for USER (for -auth token)
  imserver token revoke [flags] USER
                                    revoke every token of USER minted so far
  imserver account set [flags] USER file USER's conversations under a category
                                    or a sub-business, for the other member
  imserver backup [flags] DEST      write a consistent copy of the database
                                    while the server runs
  imserver restore [flags] BACKUP   put a backup in place of the database
                                    (with the server stopped)
  imserver migrate [store flags]    create the DynamoDB tables and the S3 bucket
                                    of the scaled-out deployment (-store dynamodb)
  imserver status [store flags] -redis URL
                                    the scaled-out deployment at a glance: live
                                    nodes, their connections, the services' health
  imserver archive -older-than 90d [flags]
                                    move old message bodies to cold storage
                                    (-blob), while the server runs

Run "imserver COMMAND -help" for a command's flags.
Every flag can also be set by an environment variable: -listen is IM_LISTEN,
-dev-allow-remote is IM_DEV_ALLOW_REMOTE, and so on.
`

func main() {
	args := os.Args[1:]
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(args)
	case "token":
		err = token(args)
	case "migrate":
		err = migrate(args)
	case "account":
		err = account(args)
	case "backup":
		err = backup(args)
	case "restore":
		err = restore(args)
	case "archive":
		err = archive(args)
	case "status":
		err = status(args)
	case "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "imserver: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "imserver %s: %v\n", cmd, err)
		os.Exit(1)
	}
}
