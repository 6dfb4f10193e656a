package faultrun

import (
	"context"
	"flag"
	"math/rand/v2"
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

// TestFaultRun is the fault run (see the package documentation): the
// short form by default, the long form with -args -kills N -cuts N
// -duration D.
func TestFaultRun(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d", seed)
	bin, err := BuildServer(context.Background(), ".", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	report, err := Run(context.Background(), Config{
		ServerBinary: bin, Dir: t.TempDir(), Seed: seed,
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
