package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/imcore/im/internal/tcpproxy"
	"github.com/imcore/im/server/ownership"
)

// sideCommands are the commands that scripts/bench-cluster.sh runs beside a
// workload: no load of their own, no report.
var sideCommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"proxy":  runProxy,
	"settle": runSettle,
}

// runProxy is `imbench proxy`: a TCP proxy in front of an client that
// adds a round trip's delay to every request, until SIGINT or SIGTERM.
func runProxy(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("imbench proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "where to listen (port 0: a free one; the address is printed on stdout)")
	target := fs.String("target", "", "host:port to forward to")
	delay := fs.Duration("delay", 0, "added to each request's round trip: half on the way to the target, half on the way back, byte by byte as a delay line (so once per request, however many chunks it and its answer take)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: imbench proxy -target HOST:PORT [-listen ADDR] [-delay D]\n\n"+
			"Forwards every TCP connection to the target, every byte late by half of -delay each way,\n"+
			"until SIGINT or SIGTERM; prints the address it listens on, then, at the end, what it forwarded.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *target == "" || *delay < 0 || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	p, err := tcpproxy.Listen(*listen, *target)
	if err != nil {
		fmt.Fprintln(stderr, "imbench proxy:", err)
		return 1
	}
	if *delay > 0 {
		p.Delay(*delay / 2)
	}
	fmt.Fprintln(stdout, p.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	p.Close()
	s := p.Stats()
	fmt.Fprintf(stderr, "imbench proxy: %d connections to %s, %d chunks delayed by %v each way\n", s.Conns, *target, s.Delayed, *delay/2)
	return 0
}

// nodeFlag is a repeated -node ID=URL.
type nodeFlag struct{ ids, urls []string }

func (n *nodeFlag) String() string { return strings.Join(n.ids, ",") }

func (n *nodeFlag) Set(v string) error {
	id, url, ok := strings.Cut(v, "=")
	if !ok || id == "" || url == "" {
		return fmt.Errorf("want ID=URL, got %q", v)
	}
	n.ids, n.urls = append(n.ids, id), append(n.urls, strings.TrimSuffix(url, "/"))
	return nil
}

// runSettle is `imbench settle`: it waits until the nodes named hold
// every shard as placement puts them on those nodes, reading each node's
// own view of what it holds from its /status, and says how long it took.
func runSettle(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("imbench settle", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nodes nodeFlag
	fs.Var(&nodes, "node", "ID=URL of a node that is to be live (its id and http://host:port), once per node: exactly the nodes the shards should settle on")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	poll := fs.Duration("poll", 50*time.Millisecond, "time between two looks")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: imbench settle -node ID=URL [-node ID=URL ...] [-timeout D]\n\n"+
			"Waits until every shard is held by the node that placement (rendezvous over the nodes\n"+
			"named) gives it to, each node's holdings read from its own /status, and prints\n"+
			"\"settled SECONDS\" and each node's count; exits 1 when -timeout passes first.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(nodes.ids) == 0 || *timeout <= 0 || *poll <= 0 || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	want := ownership.Placement(nodes.ids)
	client := &http.Client{Timeout: 2 * time.Second}
	start := time.Now()
	deadline := start.Add(*timeout)
	var last string
	for {
		held, views := map[string][]int{}, []string{}
		settled := true
		for i, id := range nodes.ids {
			shards, err := heldShards(client, nodes.urls[i], id)
			if err != nil {
				settled = false
				views = append(views, fmt.Sprintf("%s: %v", id, err))
				continue
			}
			held[id] = shards
			if !samePlacement(shards, want[id]) {
				settled = false
			}
			views = append(views, fmt.Sprintf("%s=%d", id, len(shards)))
		}
		last = strings.Join(views, " ")
		if settled {
			fmt.Fprintf(stdout, "settled %.3f %s\n", time.Since(start).Seconds(), last)
			return 0
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stdout, "unsettled %.3f %s (want %s)\n", time.Since(start).Seconds(), last, placedCounts(nodes.ids, want))
			return 1
		}
		time.Sleep(*poll)
	}
}

// heldShards reads what node id says it holds on its /status.
func heldShards(client *http.Client, url, id string) ([]int, error) {
	resp, err := client.Get(url + "/status?format=json&services=0")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/status answered %s", resp.Status)
	}
	var st struct {
		Nodes []struct {
			ID     string `json:"id"`
			Shards []int  `json:"shards"`
		} `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, err
	}
	for _, n := range st.Nodes {
		if n.ID == id {
			return n.Shards, nil
		}
	}
	return nil, fmt.Errorf("not in its own /status yet")
}

// samePlacement reports whether held is exactly want.
func samePlacement(held []int, want []ownership.Shard) bool {
	if len(held) != len(want) {
		return false
	}
	held = slices.Sorted(slices.Values(held))
	for i, s := range want {
		if held[i] != int(s) {
			return false
		}
	}
	return true
}

// placedCounts says how many shards placement gives each node.
func placedCounts(ids []string, want map[string][]ownership.Shard) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s=%d", id, len(want[id]))
	}
	return strings.Join(parts, " ")
}
