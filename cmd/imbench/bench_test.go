package main

import (
	"context"
	"io"
	"testing"

	"github.com/imcore/im/server/servertest"
)

// BenchmarkDMMarks runs the dm workload (closed loop, 100 pairs × window
// 4, warm-up 2 s, 10 s measured) against an in-process server on the
// storage IM_TEST_STORE names, with the recipients' marks sent with and
// without an id, and reports imbench's figures: whether receipts keep up
// with the sends they answer (read-receipted % of sent). Run it once:
//
//	IM_TEST_STORE=memory go test -run '^$' -bench DMMarks -benchtime 1x ./cmd/imbench/
//
// Generator and server share the process here; cmd/imbench against a
// separate imserver (docs/PERFORMANCE.md) is the measurement of record.
func BenchmarkDMMarks(b *testing.B) {
	for _, mode := range []struct{ name, flag string }{{"with-id", "-mark-ids=true"}, {"without-id", "-mark-ids=false"}} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				env := startServer(b)
				cfg, err := parseConfig([]string{"dm", "-pairs", "100", "-window", "4", mode.flag, "-q", "-echo", "0",
					"-server", env.URL, "-setup-timeout", servertest.Timeout.String()}, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				r, err := run(context.Background(), cfg, func(string, ...any) {})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if r.Errors.Total != 0 {
					b.Fatalf("%d errors: %v", r.Errors.Total, r.Errors.First)
				}
				sent, _ := r.Rates.get("sent_per_s")
				read, _ := r.Rates.get("read_per_s")
				pct, _ := r.Values.get("read_vs_sent_pct")
				lat, _ := r.Latency.get("send_read")
				b.ReportMetric(sent, "sent/s")
				b.ReportMetric(read, "read/s")
				b.ReportMetric(pct, "read%")
				b.ReportMetric(lat.P50, "p50-send-read-ms")
				b.ReportMetric(lat.P99, "p99-send-read-ms")
				b.ReportMetric(float64(lat.Missing), "reads-missing")
				env.Stop()
			}
		})
	}
}
