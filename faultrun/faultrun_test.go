package faultrun

import (
	"context"
	"flag"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"
)

// The fault run's flags (after -args). The defaults are the short form.
var (
	flagKills    = flag.Int("kills", 5, "fault run: SIGKILLs of the server to reach")
	flagCuts     = flag.Int("cuts", 200, "fault run: connection cuts to reach")
	flagDuration = flag.Duration("duration", 2*time.Minute, "fault run: bound on the chaos phase; the run fails if the targets are not met by then")
	flagSeed     = flag.Uint64("seed", 0, "fault run: seed of the harness's random choices (0: a random one, logged)")
	flagUsers    = flag.Int("users", 4, "fault run: users (2 to 8)")
	flagTwo      = flag.Int("two-device-users", 2, "fault run: how many of the users have a second device")
)

// The imserver binary the tests build once, and its directory.
var (
	binDir   string
	binOnce  sync.Once
	binPath  string
	binError error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// serverBinary builds imserver once per test binary.
func serverBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binError = os.MkdirTemp("", "faultrun-bin"); binError == nil {
			binPath, binError = BuildServer(context.Background(), ".", binDir)
		}
	})
	if binError != nil {
		t.Fatal(binError)
	}
	return binPath
}

// TestFaultRun is the fault run (see the package documentation): the
// short form by default, the long form with -args -kills N -cuts N
// -duration D.
func TestFaultRun(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d", seed)
	report, err := Run(context.Background(), Config{
		ServerBinary: serverBinary(t), Dir: t.TempDir(), Seed: seed,
		Users: *flagUsers, TwoDeviceUsers: *flagTwo,
		Kills: *flagKills, Cuts: *flagCuts, MaxChaos: *flagDuration,
		Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(report.Summary())
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
	if !report.TargetsMet {
		t.Errorf("targets not met within %v: %d of %d kills, %d of %d cuts", *flagDuration, report.Kills, *flagKills, report.Proxy.Cuts, *flagCuts)
	}
	if report.Kills == 0 || report.Proxy.Cuts == 0 || report.Proxy.MidFrame == 0 || report.WireFrames == 0 {
		t.Errorf("the chaos did not happen: %d kills, %d cuts, %d mid-frame, %d sent answers seen", report.Kills, report.Proxy.Cuts, report.Proxy.MidFrame, report.WireFrames)
	}
}

// The whole run, not only Verify, can fail: a server that loses its data
// on a restart is caught as having lost acknowledged messages.
func TestFaultRunCatchesAServerThatLosesItsData(t *testing.T) {
	if testing.Short() {
		t.Skip("a fault run")
	}
	report, err := Run(context.Background(), Config{
		ServerBinary: serverBinary(t), Dir: t.TempDir(), Seed: 1,
		Users: 2, TwoDeviceUsers: 1, Kills: 2, Cuts: 1, Converge: 5 * time.Second,
		MinKillGap: time.Second, MaxKillGap: time.Second,
		wipeAtKill: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(report.Summary())
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
