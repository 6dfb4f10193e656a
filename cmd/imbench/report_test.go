package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func sampleReport() *Report {
	r := &Report{Workload: "dm", RunID: "b1", Server: "ws://127.0.0.1:7070/ws"}
	r.Params.set("pairs", 100)
	r.Params.set("loop", "closed")
	r.WindowS = 10
	r.Counts.set("sent", 20000)
	r.Counts.set("reads_missing", 3)
	r.Rates.set("sent_per_s", 2000)
	r.Rates.set("read_per_s", 1000)
	r.Latency.set("send_read", Summary{N: 100, Missing: 4, P50: 40, P90: 80, P99: 120, Max: 300})
	r.Values.set("server_cpu_us_per_read", 1200)
	r.Values.set("server_rss_per_conn_kib", 42.5)
	r.ServerProc = &ServerProc{PID: 7, CPUPct: 120, RSSStartKiB: 1024, RSSEndKiB: 2048, RSSMaxKiB: 4096}
	r.Echo = &EchoResult{Conns: 4, Window: 32, FrameBytes: 183, RoundTripsPerS: 80000, CPUMicrosPerRT: 12,
		RTT: Summary{N: 10, P50: 0.04, P99: 0.1}}
	r.Errors = Errors{Total: 2, ByKind: map[string]int64{"internal": 1, "closed_1008": 1}, First: []string{"internal: failed"}}
	r.ratios()
	return r
}

func TestRatios(t *testing.T) {
	r := sampleReport()
	want := map[string]float64{
		"sent_per_s":             0.025, // 2000 of 80000 round trips/s
		"read_per_s":             0.0125,
		"send_read_p50":          1000, // 40 ms over 0.04 ms
		"send_read_p99":          1200,
		"server_cpu_us_per_read": 100, // 1200 µs over 12 µs
	}
	for k, v := range want {
		if got, ok := r.EchoRatio.get(k); !ok || got != v {
			t.Errorf("ratio %s: got %v (%v), want %v", k, got, ok, v)
		}
	}
	if _, ok := r.EchoRatio.get("server_rss_per_conn_kib"); ok {
		t.Error("memory has no echo counterpart")
	}
	none := &Report{}
	none.Rates.set("sent_per_s", 1)
	none.ratios()
	if len(none.EchoRatio.keys) != 0 {
		t.Error("no echo, no ratios")
	}
}

func TestJSONIsOneOrderedLine(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().writeJSON(&b); err != nil {
		t.Fatal(err)
	}
	line := b.String()
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Fatalf("want one line: %q", line)
	}
	var back map[string]any
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	if rates := back["rates"].(map[string]any); rates["read_per_s"] != 1000.0 {
		t.Fatalf("rates: %v", rates)
	}
	if i, j := strings.Index(line, `"sent_per_s":2000`), strings.Index(line, `"read_per_s":1000`); i < 0 || j < i {
		t.Fatalf("members out of order: %s", line)
	}
	if !strings.Contains(line, `"echo_ratio":{"sent_per_s":0.025`) {
		t.Fatalf("echo ratios missing: %s", line)
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().writeTable(&b); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for line := range strings.Lines(b.String()) {
		lines = append(lines, strings.Join(strings.Fields(line), " "))
	}
	out := strings.Join(lines, "\n") // columns are aligned with runs of spaces: compare words
	for _, want := range []string{
		"imbench dm run b1",
		"pairs=100 loop=closed",
		"sent_per_s 2000 2.50%",
		"send_read 100 4 40.0 80.0 120 300 1000× 1200×",
		"server_cpu_us_per_read 1200 100×",
		"counts: sent 20000, reads_missing 3",
		"server pid 7: cpu 120% of a core; rss 1.0 → 2.0 MiB (max 4.0)",
		"80000 round trips/s",
		"errors: 2 (closed_1008 1, internal 1)",
		"internal: failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 1234.5: "1234", 12.34: "12.3", 1.234: "1.23", 0.01234: "0.012"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}
