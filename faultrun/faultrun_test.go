package faultrun

import (
	"context"
	"flag"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/imcore/im/internal/testbin"
	"github.com/imcore/im/internal/testservices"
)

// The fault run's flags (after -args). The defaults are the short form.
var (
	flagKills    = flag.Int("kills", 5, "fault run: SIGKILLs of the server to reach")
	flagCuts     = flag.Int("cuts", 200, "fault run: connection cuts to reach")
	flagDuration = flag.Duration("duration", 2*time.Minute, "fault run: bound on the chaos phase; the run fails if the targets are not met by then")
	flagSeed     = flag.Uint64("seed", 0, "fault run: seed of the harness's random choices (0: a random one, logged)")
	flagUsers    = flag.Int("users", 4, "fault run: users (2 to 8)")
	flagTwo      = flag.Int("two-device-users", 2, "fault run: how many of the users have a second device")
	flagNodes    = flag.Int("nodes", 2, "cluster fault run: imserver nodes")
	flagFlushes  = flag.Int("flushes", 2, "cluster fault run: FLUSHALLs of Redis to reach")
	flagOutages  = flag.Int("dynamo-outages", 2, "cluster fault run: DynamoDB outages to reach")
	flagJoins    = flag.Int("joins", 1, "cluster fault run: nodes to join the cluster, and members to leave it (SIGTERM)")
	flagPauses   = flag.Int("pauses", 1, "cluster fault run: SIGSTOP pauses of a node past its lease")
	flagLogs     = flag.String("logs", "", "fault run: a directory to write each server's whole log to (one file per node)")
)

// The short cluster run's targets where -kills and -cuts are not given:
// each kill costs a node's start on DynamoDB.
const clusterShortKills, clusterShortCuts = 4, 100

// flagGiven reports whether the named flag was set on the command line.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// TestFaultRun is the fault run (see the package documentation): the
// short form by default, the long form with -args -kills N -cuts N
// -duration D.
func TestFaultRun(t *testing.T) {
	t.Parallel() // a run of its own: its directory, servers, proxies and tables
	seed := *flagSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d", seed)
	report, err := Run(context.Background(), Config{
		ServerBinary: testbin.Path(t, "imserver"), Dir: t.TempDir(), Seed: seed,
		Users: *flagUsers, TwoDeviceUsers: *flagTwo,
		Kills: *flagKills, Cuts: *flagCuts, MaxChaos: *flagDuration,
		Logf: t.Logf, LogDir: *flagLogs,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, report)
}

// TestFaultRunCluster is the fault run on a cluster (see the package
// documentation): two imserver nodes on DynamoDB (IM_TEST_DYNAMODB) and a
// redis-server of its own, with Redis flushed, DynamoDB failing and nodes
// joining and leaving besides the kills and cuts. The short form by
// default (4 kills, 100 cuts, 2 flushes, 2 outages, a join and a leave);
// the long form with -args -kills N -cuts N -flushes N -dynamo-outages N
// -joins N -duration D.
func TestFaultRunCluster(t *testing.T) {
	t.Parallel() // a run of its own: its directory, servers, proxies and tables
	endpoint := testservices.DynamoDB(t)
	seed := *flagSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d", seed)
	kills, cuts := clusterShortKills, clusterShortCuts
	if flagGiven("kills") {
		kills = *flagKills
	}
	if flagGiven("cuts") {
		cuts = *flagCuts
	}
	report, err := Run(context.Background(), Config{
		ServerBinary: testbin.Path(t, "imserver"), Dir: t.TempDir(), Seed: seed,
		Users: *flagUsers, TwoDeviceUsers: *flagTwo,
		Kills: kills, Cuts: cuts, MaxChaos: *flagDuration,
		Cluster: &ClusterConfig{
			DynamoDB: endpoint, TablePrefix: testservices.Prefix(t), Nodes: *flagNodes,
			Flushes: *flagFlushes, Outages: *flagOutages, Joins: *flagJoins, Pauses: *flagPauses,
		},
		Logf: t.Logf, LogDir: *flagLogs,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, report)
	d := report.Dynamo
	if report.Flushes == 0 || report.Outages == 0 || d.ResetLive+d.Refused+d.Delayed == 0 {
		t.Errorf("the cluster's chaos did not happen: %d flushes, %d outages, DynamoDB proxy %+v", report.Flushes, report.Outages, d)
	}
	if *flagJoins > 0 && (report.Joins == 0 || report.Leaves == 0) {
		t.Errorf("no node joined and left: %d joins, %d leaves", report.Joins, report.Leaves)
	}
	if *flagPauses > 0 && report.Pauses == 0 {
		t.Errorf("no node was paused past its lease")
	}
}

// checkReport fails t for every violation of the run, unmet targets, or a
// chaos that did not happen.
func checkReport(t *testing.T, report *Report) {
	t.Helper()
	t.Log(report.Summary())
	for _, line := range report.ServerFaults {
		t.Log("server: " + line)
	}
	if s := report.ErrorSummary(); s != "" {
		t.Logf("engine error events:\n%s", s)
	}
	for i, v := range report.Violations {
		if i == 100 {
			t.Errorf("… and %d more violations", len(report.Violations)-i)
			break
		}
		t.Error(v)
	}
	cfg := report.Config
	if !report.TargetsMet {
		t.Errorf("targets not met within %v: %s", cfg.MaxChaos, report.Targets())
	}
	if report.Kills == 0 || report.Proxy.Cuts == 0 || report.Proxy.MidFrame == 0 || report.WireFrames == 0 {
		t.Errorf("the chaos did not happen: %d kills, %d cuts, %d mid-frame, %d sent answers seen", report.Kills, report.Proxy.Cuts, report.Proxy.MidFrame, report.WireFrames)
	}
}

// The whole run, not only Verify, can fail: a server that loses its data
// on a restart is caught as having lost acknowledged messages.
func TestFaultRunCatchesAServerThatLosesItsData(t *testing.T) {
	t.Parallel() // a run of its own: its directory, servers, proxies and tables
	if testing.Short() {
		t.Skip("a fault run")
	}
	report, err := Run(context.Background(), Config{
		ServerBinary: testbin.Path(t, "imserver"), Dir: t.TempDir(), Seed: 1,
		Users: 2, TwoDeviceUsers: 1, Kills: 2, Cuts: 1, Converge: 5 * time.Second,
		MinKillGap: time.Second, MaxKillGap: time.Second,
		wipeAtKill: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkLost(t, report)
}

// So can the cluster run: Verify reads what the cluster stored, so a
// cluster whose tables and Redis are emptied at a kill is caught too.
func TestFaultRunClusterCatchesLostData(t *testing.T) {
	t.Parallel() // a run of its own: its directory, servers, proxies and tables
	if testing.Short() {
		t.Skip("a fault run")
	}
	endpoint := testservices.DynamoDB(t)
	report, err := Run(context.Background(), Config{
		ServerBinary: testbin.Path(t, "imserver"), Dir: t.TempDir(), Seed: 1,
		Users: 2, TwoDeviceUsers: 1, Kills: 2, Cuts: 1, Converge: 5 * time.Second,
		MinKillGap: time.Second, MaxKillGap: time.Second,
		Cluster:    &ClusterConfig{DynamoDB: endpoint, TablePrefix: testservices.Prefix(t)},
		wipeAtKill: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkLost(t, report)
}

// checkLost fails t unless the run reported lost messages.
func checkLost(t *testing.T, report *Report) {
	t.Helper()
	t.Log(report.Summary())
	for _, line := range report.ServerFaults {
		t.Log("server: " + line)
	}
	lost := 0
	for _, v := range report.Violations {
		if v.Kind == "lost" {
			lost++
		}
	}
	if lost == 0 {
		t.Fatalf("no lost message reported after the server's data was wiped; violations: %v", report.Violations)
	}
	t.Logf("%d lost messages reported, %d violations in all", lost, len(report.Violations))
}
