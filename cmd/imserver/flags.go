package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// envName is the environment variable that sets a flag: IM_ and the flag's
// name in upper case with dashes as underscores.
func envName(flagName string) string {
	return "IM_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args, then fills every flag not given on the command
// line from its environment variable.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, e)
			}
		}
	})
	return err
}

// defaultDataDir is where the server keeps its data unless told otherwise:
// $XDG_DATA_HOME/imserver, else ~/.local/share/imserver.
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "imserver")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "imserver")
	}
	return "imserver-data"
}

// flagUsage prints a command's usage with each flag's variable.
func flagUsage(fs *flag.FlagSet, synopsis string) func() {
	return func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: %s\n\nFlags (each also read from its environment variable):\n", synopsis)
		fs.VisitAll(func(f *flag.Flag) {
			fmt.Fprintf(out, "  -%s (%s)\n    \t%s", f.Name, envName(f.Name), f.Usage)
			if f.DefValue != "" && f.DefValue != "false" {
				fmt.Fprintf(out, " (default %q)", f.DefValue)
			}
			fmt.Fprintln(out)
		})
	}
}

// oneArgument parses a command's flags (from the environment too) and
// returns its one positional argument, what it is called in the error
// when it is missing or not alone. help is true when -help was asked: the
// usage is printed and the command has nothing more to do.
func oneArgument(fs *flag.FlagSet, args []string, what string) (arg string, help bool, err error) {
	if err := parseFlags(fs, args); err != nil {
		if err == flag.ErrHelp {
			return "", true, nil
		}
		return "", false, err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return "", false, fmt.Errorf("want exactly one %s", what)
	}
	return fs.Arg(0), false, nil
}
