package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/imcore/im/protocol"
)

// Config is one run of the generator.
type Config struct {
	Workload string

	// Common to every workload.
	Server       string
	Duration     time.Duration
	Warmup       time.Duration
	Count        int64
	Drain        time.Duration
	PID          int
	Echo         time.Duration
	EchoCount    int64
	EchoConns    int
	EchoWindow   int
	MaxErrors    int64
	JSONFile     string
	RunID        string
	BodyBytes    int
	SetupTimeout time.Duration
	Concurrency  int
	Quiet        bool
	CPUProfile   string

	// dm and group.
	Pairs     int
	Window    int
	Rate      float64
	Ack       string
	MarkIDs   bool
	Groups    int
	GroupSize int
	StartFile string

	// catchup.
	Users       int
	Messages    int
	Convs       int
	CatchupKind string
	Feeders     int
	CatchupSync bool

	// idle.
	Conns int

	// sync.
	Watchers  int
	Watched   int
	Flappers  int
	Sessions  int
	Changes   int
	FullSyncs int
}

// workloads names every workload with a line of help.
var workloads = []struct{ name, help string }{
	{"dm", "P pairs of users, one direct chat each: one sends, the other acknowledges every message (delivered, then read). " +
		"Closed loop: each sender keeps -window sends awaiting their sent. Open loop (-rate > 0): sends at a total rate, " +
		"latency counted from when each send was due. Reports sent/s, delivered/s, read-receipted/s and the latency of " +
		"send→sent, send→recipient (the msg push), send→delivered and send→read (the sender's status covering it)."},
	{"group", "the same in -groups groups of -group-size members: member 0 sends, every other member acknowledges; " +
		"delivered and read mean by every member (the status minimum). send→recipient counts every delivery."},
	{"catchup", "-users users each hold -messages messages in -convs conversations while offline (fed before the " +
		"measurement by other users), then all reconnect at once. A user has \"stored everything\" when every message has " +
		"come (replayed pushes, checked seq by seq), the server has answered ok to its delivered marks (durable), and its " +
		"session list has loaded (sync, -catchup-sync). Reports the time until every user is done."},
	{"idle", "-conns authenticated connections (one user each) that then do nothing for -duration; with -pid, the " +
		"server's RSS per connection. Every connection answers a request at the end (alive)."},
	{"sync", "one user with -sessions sessions (direct chats it started). Full sync: the whole list, page by page " +
		"(-full-syncs times). Incremental: a second device changes -changes sessions (pin/unpin), then the first syncs " +
		"from its cursor; the latency of that sync."},
	{"presence", "-watchers connections each watch -watched users among -flappers users they wrote to; every watcher " +
		"asks their presence (the answer's latency), then every flapper's connection closes and opens again for -duration " +
		"while the watchers count the pushes. Reports presence changes/s and, with -pid, the server's CPU per change."},
	{"echo", "only the echo: raw gorilla/websocket connections to an echo server inside the generator, frames the " +
		"size of a send. Every other workload runs it first (-echo) and reports each figure's ratio to it."},
}

// parseConfig parses the command line: the workload, then flags (or flags
// first). It returns flag.ErrHelp when help was asked.
func parseConfig(args []string, out io.Writer) (*Config, error) {
	cfg := &Config{}
	fs := flag.NewFlagSet("imbench", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&cfg.Server, "server", "ws://127.0.0.1:7070/ws", "the server's WebSocket URL (dev auth); several, comma-separated, spread the connections over the nodes of a cluster in turn, in the order they are opened (dm: every sender on the first, its recipient on the second)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "measurement length after the warm-up (default: dm, group, sync 10s; idle 3s; echo 5s; catchup: its time limit, 30s)")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "load before the measurement, not counted (default: 2s for dm and group, none otherwise)")
	fs.Int64Var(&cfg.Count, "count", 0, "bound on the run's count (0: none): dm/group messages sent (warm-up included), sync incremental rounds, echo round trips")
	fs.DurationVar(&cfg.Drain, "drain", 5*time.Second, "after the last send, how long to wait for the answers and receipts still due; what has not come by then is reported missing")
	fs.IntVar(&cfg.PID, "pid", 0, "the server's process id: sample its CPU (/proc/PID/stat) and RSS (VmRSS) during the run (0: do not)")
	fs.DurationVar(&cfg.Echo, "echo", 2*time.Second, "length of the echo measured before the workload, for the ratios (0: none)")
	fs.Int64Var(&cfg.EchoCount, "echo-count", 0, "bound on the echo's round trips (0: none)")
	fs.IntVar(&cfg.EchoConns, "echo-conns", 4, "echo connections in its throughput phase")
	fs.IntVar(&cfg.EchoWindow, "echo-window", 32, "frames in flight per echo connection")
	fs.Int64Var(&cfg.MaxErrors, "max-errors", 0, "exit with status 1 when the run has more errors than this")
	fs.StringVar(&cfg.JSONFile, "json", "", "also append the JSON line to this file")
	fs.StringVar(&cfg.RunID, "run-id", "", "prefix of every user id of the run, so runs against one server never share a user (default: random)")
	fs.IntVar(&cfg.BodyBytes, "body", 64, "message body size in bytes")
	fs.DurationVar(&cfg.SetupTimeout, "setup-timeout", 2*time.Minute, "bound on connecting and preparing (groups, offline messages, sessions)")
	fs.IntVar(&cfg.Concurrency, "connect-concurrency", 64, "connections opened at once while setting up (the server's -max-handshakes-per-ip, 64 by default, refuses more)")
	fs.BoolVar(&cfg.Quiet, "q", false, "no progress on stderr")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write the generator's own CPU profile to this file (is the generator the bottleneck?)")

	fs.IntVar(&cfg.Pairs, "pairs", 100, "dm: pairs of users")
	fs.IntVar(&cfg.Window, "window", 4, "dm, group: closed loop: sends in flight per sender (until its sent)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "dm, group: open loop at this many messages per second in all (0: closed loop)")
	fs.StringVar(&cfg.Ack, "ack", "msg", `dm, group: how recipients acknowledge: "msg" — delivered then read, each with an id, for every message as it comes; "batch" — one delivered+read pair in flight per connection, what comes meanwhile acknowledged together (as a real client coalesces)`)
	fs.BoolVar(&cfg.MarkIDs, "mark-ids", true, `dm, group: recipients' delivered and read frames carry an id, answered ok once durable; -mark-ids=false sends them without id (the protocol makes it optional: no answer comes, only the sender's status says they were applied); only with -ack msg`)
	fs.IntVar(&cfg.Groups, "groups", 1, "group: groups")
	fs.IntVar(&cfg.GroupSize, "group-size", 100, "group: members per group, the sender included")
	fs.StringVar(&cfg.StartFile, "start-file", "", "dm, group: once every client is connected and set up, wait (within -setup-timeout) until this file exists before sending, so that a script can read the servers' counters between the clients' setup and the load")

	fs.IntVar(&cfg.Users, "users", 1000, "catchup: users reconnecting")
	fs.IntVar(&cfg.Messages, "messages", 100, "catchup: messages waiting for each user")
	fs.IntVar(&cfg.Convs, "convs", 10, "catchup: conversations each user's messages are in")
	fs.StringVar(&cfg.CatchupKind, "catchup-conv", "direct", `catchup: "direct" — each user's conversations are direct chats with -convs feeding users; "group" — -convs groups of all users (fed much faster)`)
	fs.IntVar(&cfg.Feeders, "feeders", 64, "catchup: connections feeding the offline messages (and sync: the sessions)")
	fs.BoolVar(&cfg.CatchupSync, "catchup-sync", true, "catchup: each user also loads its session list (sync) after the hello")

	fs.IntVar(&cfg.Conns, "conns", 2000, "idle: connections")

	fs.IntVar(&cfg.Watchers, "watchers", 100, "presence: watching connections (0: the flapping alone, the cost of a connection coming and going unwatched)")
	fs.IntVar(&cfg.Watched, "watched", 100, "presence: users each watcher watches")
	fs.IntVar(&cfg.Flappers, "flappers", 1000, "presence: users whose connection comes and goes")

	fs.IntVar(&cfg.Sessions, "sessions", 10000, "sync: sessions of the user")
	fs.IntVar(&cfg.Changes, "changes", 10, "sync: sessions changed before each incremental sync")
	fs.IntVar(&cfg.FullSyncs, "full-syncs", 5, "sync: full syncs measured")

	fs.Usage = func() { usage(fs) }
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cfg.Workload, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if cfg.Workload == "" && fs.NArg() > 0 {
		cfg.Workload = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["warmup"] && (cfg.Workload == "dm" || cfg.Workload == "group") {
		cfg.Warmup = 2 * time.Second
	}
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// complete fills the per-workload defaults and checks the values.
func (c *Config) complete() error {
	known := false
	for _, w := range workloads {
		known = known || w.name == c.Workload
	}
	if !known {
		return fmt.Errorf("unknown workload %q: want dm, group, catchup, idle, sync or echo (imbench -h)", c.Workload)
	}
	if c.Duration == 0 {
		c.Duration = map[string]time.Duration{"dm": 10 * time.Second, "group": 10 * time.Second, "sync": 10 * time.Second,
			"idle": 3 * time.Second, "echo": 5 * time.Second, "catchup": 30 * time.Second}[c.Workload]
	}
	if c.RunID == "" {
		b := make([]byte, 3)
		rand.Read(b)
		c.RunID = "b" + hex.EncodeToString(b)
	}
	checks := []struct {
		bad  bool
		what string
	}{
		{c.Duration < 0 || c.Warmup < 0 || c.Drain < 0 || c.Echo < 0 || c.SetupTimeout <= 0, "durations cannot be negative"},
		{c.Count < 0 || c.EchoCount < 0 || c.MaxErrors < 0, "counts cannot be negative"},
		{c.EchoConns < 1 || c.EchoWindow < 1, "-echo-conns and -echo-window must be positive"},
		{c.BodyBytes < 1 || c.BodyBytes > protocol.DefaultMaxBody, "-body must be 1 to 4096 bytes"},
		{c.Concurrency < 1, "-connect-concurrency must be positive"},
		{c.Pairs < 1 || c.Window < 1 || c.Rate < 0, "-pairs and -window must be positive, -rate not negative"},
		{c.Ack != "msg" && c.Ack != "batch", `-ack must be "msg" or "batch"`},
		{!c.MarkIDs && c.Ack == "batch", `-ack batch waits for each read's ok: it needs -mark-ids`},
		{c.Groups < 1 || c.GroupSize < 2, "-groups must be positive and -group-size at least 2"},
		{c.Users < 1 || c.Messages < 1 || c.Convs < 1 || c.Feeders < 1, "-users, -messages, -convs and -feeders must be positive"},
		{c.CatchupKind != "direct" && c.CatchupKind != "group", `-catchup-conv must be "direct" or "group"`},
		{c.Conns < 1, "-conns must be positive"},
		{c.Sessions < 1 || c.Changes < 1 || c.Changes > c.Sessions || c.FullSyncs < 0, "-sessions and -changes must be positive, -changes at most -sessions"},
		{len(c.RunID) > 12 || !protocol.ValidUser(c.RunID), "-run-id must be 1–12 characters of [a-z0-9_.-], starting with a letter or digit"},
	}
	for _, ch := range checks {
		if ch.bad {
			return fmt.Errorf("%s", ch.what)
		}
	}
	return nil
}

// user is a user id of this run: the run id, a dash, the name.
func (c *Config) user(name string) string { return c.RunID + "-" + name }

// usage explains each workload and flag.
func usage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprint(out, `Usage: imbench WORKLOAD [flags]

imbench is imserver's load generator. It speaks the protocol on raw
WebSocket connections (the protocol package's codec, no client, no
local store) to a server on loopback, bounds every run in time (-duration)
and count (-count), and prints a table and one line of JSON with every
figure: rates over the measurement window, exact latency percentiles, error
counts, the server's CPU and RSS (-pid) and each figure's ratio to an echo
measured in the same run. It exits 1 when the run had more than
-max-errors errors (error frames, lost connections, failed setup).

Workloads:
`)
	for _, w := range workloads {
		fmt.Fprintf(out, "  %-8s %s\n\n", w.name, wrap(w.help, 66, "           "))
	}
	fmt.Fprint(out, `Side commands (imbench COMMAND -h): "proxy" forwards TCP to a service adding a
delay to each request's round trip; "settle" waits until the nodes of a
cluster hold every shard where placement puts it.

The server must not hold the load back: start it on a fresh data
directory with generous limits, e.g.

  imserver -data /tmp/imbench-data -rate 1e6 -rate-burst 1000000 \
    -max-conns-per-ip 0 -max-conns-per-user 0 -max-handshakes 0 \
    -max-handshakes-per-ip 0 -group-creates 0 -group-changes 0

and, for thousands of connections, raise the descriptor limit of both
processes (ulimit -n 65536). Users are "<run-id>-<name>", so runs against
one server never share a user.

Flags:
`)
	fs.PrintDefaults()
}

// wrap breaks s into lines of at most width characters, indenting every
// line after the first.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(s) {
		if i > 0 && line+1+len(w) > width {
			b.WriteString("\n" + indent)
			line = 0
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// serverFor returns the server URL of the i-th connection opened: -server
// may list the nodes of a cluster, which take connections in turn.
func (c *Config) serverFor(i int) string {
	servers := strings.Split(c.Server, ",")
	return strings.TrimSpace(servers[i%len(servers)])
}
