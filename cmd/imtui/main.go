// Command imtui is the terminal chat client: the session list and chats of
// one user's profile, kept in a local SQLite database so that it starts
// instantly and works offline, kept live over one WebSocket to imserver.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "imtui:", err)
		var usage usageError
		if errors.As(err, &usage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// options are the command line of imtui.
type options struct {
	server, user, token, profile, data, logFile string
	theme                                       string
	notify                                      bool
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("imtui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.server, "server", "ws://127.0.0.1:7070/ws", "imserver WebSocket URL; several, comma-separated (the nodes of one deployment), to fail over to the next that answers")
	fs.StringVar(&o.user, "user", "", "user id, on a server with dev auth")
	fs.StringVar(&o.token, "token", "", "login token (from imserver token USER), on a server with token auth")
	fs.StringVar(&o.profile, "profile", "default", "profile name: each profile is one device with its own local database")
	fs.StringVar(&o.data, "data", defaultDataDir(), "directory of the profiles' local databases")
	fs.StringVar(&o.logFile, "log", "", "write the client's diagnostics to this file")
	fs.StringVar(&o.theme, "theme", "auto", "colours for a dark or a light terminal: auto (ask the terminal), dark or light")
	fs.BoolVar(&o.notify, "notify", true, "ring the bell and ask the terminal for a desktop notification (OSC 9, OSC 777) when a message arrives out of sight; -notify=false turns them off")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: imtui -user USER [flags]   (or -token TOKEN)")
		fmt.Fprintln(stderr, "\nA terminal chat client for imserver. Press ? inside for the keys.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, usageError{err}
	}
	if err := checkOptions(o, fs); err != nil {
		return o, usageError{err}
	}
	return o, nil
}

// usageError is a mistake on the command line (exit status 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func checkOptions(o options, fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q (flags only; see imtui -h)", fs.Arg(0))
	case o.user == "" && o.token == "":
		return errors.New("say who you are: -user USER (dev auth) or -token TOKEN")
	case o.user != "" && !protocol.ValidUser(o.user):
		return fmt.Errorf("-user %q is not a user id (1-32 characters of a-z 0-9 _ . -, starting with a letter or digit)", o.user)
	case !protocol.ValidDevice(o.profile):
		return fmt.Errorf("-profile %q must be 1-64 characters of A-Z a-z 0-9 _ -", o.profile)
	case badServer(o.server) != nil:
		return fmt.Errorf("-server %q must be ws:// or wss:// URLs separated by commas, like ws://127.0.0.1:7070/ws (not %q)", o.server, *badServer(o.server))
	case o.theme != "auto" && !slices.Contains(tui.Themes, o.theme):
		return fmt.Errorf("-theme %q must be auto, %s", o.theme, strings.Join(tui.Themes, " or "))
	}
	return nil
}

// badServer returns the first entry of the comma-separated -server list
// that is no WebSocket URL (nil when they all are).
func badServer(list string) *string {
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); !strings.HasPrefix(u, "ws://") && !strings.HasPrefix(u, "wss://") {
			return &u
		}
	}
	return nil
}

// defaultDataDir is $XDG_DATA_HOME/imtui, else ~/.local/share/imtui.
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "imtui")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "imtui")
	}
	return "imtui-data"
}

func run(args []string, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	// A profile's database is per user: alice and bob may both use the
	// profile "laptop" on one machine.
	who := o.user
	if who == "" {
		who = tokenUser(o.token)
	}
	dir := filepath.Join(o.data, who, o.profile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the profile directory: %w", err)
	}
	st, err := localstore.Open(filepath.Join(dir, "im.db"))
	if err != nil {
		return fmt.Errorf("cannot open the local database: %w", err)
	}
	defer st.Close()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if o.logFile != "" {
		f, err := os.OpenFile(o.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		logger = slog.New(slog.NewTextHandler(f, nil))
	}
	c, err := client.New(client.Config{URL: o.server, User: o.user, Token: o.token, Store: st, Logger: logger})
	if err != nil {
		return err
	}
	defer c.Close()

	theme := o.theme
	if theme == "auto" {
		theme = ""
	}
	p := tea.NewProgram(tui.New(backend{Client: c, server: o.server, profile: o.profile}, tui.Options{NoNotify: !o.notify, Theme: theme}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() {
		err := c.Run(ctx)
		if err != nil {
			// The server refused us for good (a bad token, say): retrying
			// would not help, so leave the screen and say why.
			p.Quit()
		}
		runErr <- err
	}()
	_, uiErr := p.Run()
	cancel()
	if err := <-runErr; err != nil {
		return engineError(err, o)
	}
	return uiErr
}

// engineError says why the client stopped for good, in terms of the flags
// that would fix it.
func engineError(err error, o options) error {
	switch {
	case errors.Is(err, client.ErrNoEndpoint):
		return fmt.Errorf("-server %s is not imserver's WebSocket endpoint (like ws://127.0.0.1:7070/ws): %w", o.server, err)
	case errors.Is(err, client.ErrNeedsUser):
		return fmt.Errorf("this server uses -user, not -token: start imtui with -user USER: %w", err)
	}
	return fmt.Errorf("the server refused this client: %w", err)
}

// tokenUser is the user a token names (tokens read v1:USER:EXPIRY:SIG),
// or "token" for one of another shape: the server judges it anyway.
func tokenUser(token string) string {
	parts := strings.Split(token, ":")
	if len(parts) == 4 && protocol.ValidUser(parts[1]) {
		return parts[1]
	}
	return "token"
}

// backend is the client as the UI sees it.
type backend struct {
	*client.Client
	server  string
	profile string // the -profile flag
}

// Server implements tui.Backend: the endpoint of the connection or the
// attempt, of those -server lists.
func (b backend) Server() string {
	if u := b.Conn().URL; u != "" {
		return u
	}
	return b.server
}

var _ tui.Backend = backend{}
