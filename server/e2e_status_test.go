package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// nodeStatus reads a node's /status as JSON.
func nodeStatus(t *testing.T, env *servertest.Env) server.Status {
	t.Helper()
	var st server.Status
	if err := json.Unmarshal([]byte(httpGet(t, "http://"+env.Addr+"/status?format=json")), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestClusterStatusListsTheNodes: /status on any node lists every live
// node with its connections and the users its presence lists, and the
// services' health; a node that stops is no longer listed.
func TestClusterStatusListsTheNodes(t *testing.T) {
	nodes := servertest.Cluster(t, 2)
	nodes[0].DialOnline(t, "alice", "laptop")
	nodes[1].DialOnline(t, "bob", "phone")
	nodes[1].DialOnline(t, "carol", "phone")
	// B joined after A took every shard: A hands B its share.
	nodes[0].WaitFor("the shards spread over both nodes", func() bool {
		a, b := len(nodeStatus(t, nodes[0]).Nodes[0].Shards), len(nodeStatus(t, nodes[1]).Nodes[1].Shards)
		return a > 0 && b > 0 && a+b == 256
	})

	// Each node shows itself as it is now, the others as of their last
	// heartbeat.
	var st server.Status
	for i, want := range []struct{ devices, users int }{{1, 1}, {2, 2}} {
		st = nodeStatus(t, nodes[i])
		if len(st.Nodes) != 2 || st.Nodes[0].ID != "A" || st.Nodes[1].ID != "B" {
			t.Fatalf("nodes listed by %s: %+v; want A and B", string(rune('A'+i)), st.Nodes)
		}
		n := st.Nodes[i]
		if n.Devices != want.devices || n.Connections != want.devices || n.Users != int64(want.users) {
			t.Errorf("node %s: %d devices, %d connections, %d users; want %d, %d, %d", n.ID, n.Devices, n.Connections, n.Users, want.devices, want.devices, want.users)
		}
		if !n.Live || n.NotReady != "" || n.Seen.IsZero() || n.Addr != nodes[i].Addr {
			t.Errorf("node %s: %+v; want subscribed, ready, seen, at %s", n.ID, n, nodes[i].Addr)
		}
		if len(n.Shards) == 0 {
			t.Errorf("node %s reports no shards", n.ID)
		}
	}
	names := map[string]bool{}
	for _, e := range st.Services {
		names[e.Name] = true
		if !e.OK {
			t.Errorf("service %s failing: %s", e.Name, e.Detail)
		}
	}
	if !names["redis"] || !names["dynamodb"] {
		t.Errorf("services checked: %+v; want redis and dynamodb", st.Services)
	}
	text := httpGet(t, "http://"+nodes[0].Addr+"/status")
	for _, want := range []string{"nodes: 2 listed, 2 ready", "  A ", "  B ", "redis", "dynamodb"} {
		if !strings.Contains(text, want) {
			t.Errorf("/status as text lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(text, "SHARDS") {
		t.Errorf("/status as text lacks the SHARDS column:\n%s", text)
	}
	// ?services=0: the nodes alone, what polls /status asks.
	var light server.Status
	if err := json.Unmarshal([]byte(httpGet(t, "http://"+nodes[0].Addr+"/status?format=json&services=0")), &light); err != nil {
		t.Fatal(err)
	}
	if len(light.Nodes) != 2 || len(light.Services) != 0 {
		t.Errorf("/status?services=0: %d nodes, services %+v; want both nodes and no service checked", len(light.Nodes), light.Services)
	}

	nodes[1].Stop()
	st = nodeStatus(t, nodes[0])
	if len(st.Nodes) != 1 || st.Nodes[0].ID != "A" {
		t.Fatalf("after B stopped: %+v; want A alone", st.Nodes)
	}
}

// TestClusterShowsTheLeasesGrace: after Redis lost its data the
// deployment is in the leases' grace for one lease TTL (no node takes a
// shard without a holder); meanwhile im_recovering is 1,
// im_recovery_remaining_seconds counts down and /status says so on Redis,
// while /readyz stays 200 (the node serves its shards). Once the grace is
// over, im_recovering is 0 again.
func TestClusterShowsTheLeasesGrace(t *testing.T) {
	servertest.OncePerSuite(t)
	so := servertest.ScaledOut(t)
	node := servertest.ClusterOn(t, so, 1)[0]
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + node.Addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("readyz before: %d %s", code, body)
	}
	if v := scrape(t, node)["im_recovering"]; v != 0 {
		t.Fatalf("im_recovering before: %v", v)
	}

	opts, err := redis.ParseURL(so.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	// The grace a loss opens (set here rather than by a flush: other
	// tests share this Redis), long enough not to end during the checks.
	if err := rdb.Set(ctx, so.TablePrefix+"owners/grace", "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	m := scrape(t, node)
	if m["im_recovering"] != 1 || m["im_recovery_remaining_seconds"] <= 0 {
		t.Fatalf("in the grace: im_recovering %v, im_recovery_remaining_seconds %v", m["im_recovering"], m["im_recovery_remaining_seconds"])
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("readyz in the grace: %d %q; want 200 (the node serves)", code, body)
	}
	st := nodeStatus(t, node)
	var redisDetail string
	for _, e := range st.Services {
		if e.Name == "redis" {
			redisDetail = e.Detail
		}
	}
	if !strings.Contains(redisDetail, "grace") {
		t.Fatalf("/status's redis in the grace: %q; want the grace shown", redisDetail)
	}

	// The grace over (ended here rather than waited for).
	if err := rdb.Del(ctx, so.TablePrefix+"owners/grace").Err(); err != nil {
		t.Fatal(err)
	}
	if v := scrape(t, node)["im_recovering"]; v != 0 {
		t.Fatalf("im_recovering after: %v", v)
	}
}
