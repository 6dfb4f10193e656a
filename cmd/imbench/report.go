package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Report is the outcome of one run: every figure, in the order measured.
// It is printed as one line of JSON and as a table.
type Report struct {
	Workload string `json:"workload"`
	RunID    string `json:"run_id"`
	Server   string `json:"server"`
	// Params are the workload's parameters, as run.
	Params ordered[any] `json:"params"`
	// WindowS is the length of the measurement window in seconds: rates
	// are per second of it.
	WindowS float64          `json:"window_s"`
	Counts  ordered[int64]   `json:"counts"`
	Rates   ordered[float64] `json:"rates"`
	Latency ordered[Summary] `json:"latency_ms"`
	// Values are the other figures, each name ending in its unit.
	Values ordered[float64] `json:"values"`
	// Server is what the sampling of the server's process saw (-pid).
	ServerProc *ServerProc `json:"server_proc,omitempty"`
	// GeneratorCPUPct is the generator's own CPU over the window, in
	// percent of one core: it shares the machine with the server.
	GeneratorCPUPct float64     `json:"generator_cpu_pct"`
	Echo            *EchoResult `json:"echo,omitempty"`
	// EchoRatio holds each figure's ratio to the echo from the same run
	// (see ratios).
	EchoRatio ordered[float64] `json:"echo_ratio"`
	Errors    Errors           `json:"errors"`
	Notes     []string         `json:"notes,omitempty"`
}

// ServerProc is the server's process over the measurement window.
type ServerProc struct {
	PID int `json:"pid"`
	// CPUPct is the server's CPU time over the window in percent of one
	// core (200 is both cores of a 2-core machine).
	CPUPct      float64 `json:"cpu_pct"`
	RSSStartKiB int64   `json:"rss_start_kib"`
	RSSEndKiB   int64   `json:"rss_end_kib"`
	RSSMaxKiB   int64   `json:"rss_max_kib"`
}

// Errors counts the run's failures by kind: protocol error codes
// (rate_limited, internal, …), closed_<code> for a connection the server
// closed, conn_lost, and the generator's own (dial, timeout, …).
type Errors struct {
	Total  int64            `json:"total"`
	ByKind map[string]int64 `json:"by_kind"`
	First  []string         `json:"first,omitempty"`
}

// ordered is a JSON object whose members keep the order they were added
// in, so that the JSON reads in the same order as the table.
type ordered[V any] struct {
	keys []string
	vals map[string]V
}

// set adds or replaces a member.
func (o *ordered[V]) set(k string, v V) {
	if o.vals == nil {
		o.vals = map[string]V{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// get returns a member.
func (o *ordered[V]) get(k string) (V, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// MarshalJSON writes the members in order.
func (o ordered[V]) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		val, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ratios fills EchoRatio from the echo measured in the same run:
//   - a rate (per second) over the echo's round trips per second: the
//     fraction of the machine's frame limit the workload reached;
//   - a latency's p50 and p99 over the echo's unloaded round trip p50 and
//     p99: how many bare round trips it costs;
//   - a value named *_cpu_us_per_* over the echo's CPU per round trip.
//
// Other figures (counts, memory) have no echo counterpart.
func (r *Report) ratios() {
	e := r.Echo
	if e == nil || e.RoundTripsPerS <= 0 {
		return
	}
	for _, k := range r.Rates.keys {
		r.EchoRatio.set(k, round(r.Rates.vals[k]/e.RoundTripsPerS, 5))
	}
	for _, k := range r.Latency.keys {
		s := r.Latency.vals[k]
		if s.N == 0 {
			continue
		}
		if e.RTT.P50 > 0 {
			r.EchoRatio.set(k+"_p50", round(s.P50/e.RTT.P50, 1))
		}
		if e.RTT.P99 > 0 {
			r.EchoRatio.set(k+"_p99", round(s.P99/e.RTT.P99, 1))
		}
	}
	for _, k := range r.Values.keys {
		if strings.Contains(k, "_cpu_us_per_") && e.CPUMicrosPerRT > 0 {
			r.EchoRatio.set(k, round(r.Values.vals[k]/e.CPUMicrosPerRT, 2))
		}
	}
}

// round rounds v to digits after the point (JSON and tables stay short).
func round(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// writeJSON writes the report as one line of JSON.
func (r *Report) writeJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writeTable writes the report for people.
func (r *Report) writeTable(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "imbench %s  run %s  %s\n", r.Workload, r.RunID, r.Server)
	var params []string
	for _, k := range r.Params.keys {
		params = append(params, fmt.Sprintf("%s=%v", k, r.Params.vals[k]))
	}
	fmt.Fprintf(&b, "  %s\n", strings.Join(params, " "))
	if r.WindowS > 0 {
		fmt.Fprintf(&b, "  measured over %.2f s\n", r.WindowS)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(r.Rates.keys) > 0 || len(r.Values.keys) > 0 {
		fmt.Fprintln(tw, "\tfigure\tvalue\tvs echo\t")
		for _, k := range r.Rates.keys {
			fmt.Fprintf(tw, "\t%s\t%s\t%s\t\n", k, num(r.Rates.vals[k]), r.ratioText(k, "%"))
		}
		for _, k := range r.Values.keys {
			fmt.Fprintf(tw, "\t%s\t%s\t%s\t\n", k, num(r.Values.vals[k]), r.ratioText(k, "×"))
		}
	}
	tw.Flush()
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(r.Latency.keys) > 0 {
		fmt.Fprintln(tw, "\tlatency (ms)\tn\tmissing\tp50\tp90\tp99\tmax\tp50 vs echo\tp99 vs echo\t")
		for _, k := range r.Latency.keys {
			s := r.Latency.vals[k]
			fmt.Fprintf(tw, "\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", k, s.N, s.Missing, num(s.P50), num(s.P90), num(s.P99), num(s.Max),
				r.ratioText(k+"_p50", "×"), r.ratioText(k+"_p99", "×"))
		}
	}
	tw.Flush()
	if len(r.Counts.keys) > 0 {
		var counts []string
		for _, k := range r.Counts.keys {
			counts = append(counts, fmt.Sprintf("%s %d", k, r.Counts.vals[k]))
		}
		fmt.Fprintf(&b, "  counts: %s\n", strings.Join(counts, ", "))
	}
	if p := r.ServerProc; p != nil {
		fmt.Fprintf(&b, "  server pid %d: cpu %.0f%% of a core; rss %.1f → %.1f MiB (max %.1f)\n",
			p.PID, p.CPUPct, mib(p.RSSStartKiB), mib(p.RSSEndKiB), mib(p.RSSMaxKiB))
	}
	fmt.Fprintf(&b, "  generator cpu %.0f%% of a core\n", r.GeneratorCPUPct)
	if e := r.Echo; e != nil {
		fmt.Fprintf(&b, "  echo: %d conns × window %d, %d-byte frames: %s round trips/s, %.1f µs cpu each; unloaded rtt p50 %s ms, p99 %s ms\n",
			e.Conns, e.Window, e.FrameBytes, num(e.RoundTripsPerS), e.CPUMicrosPerRT, num(e.RTT.P50), num(e.RTT.P99))
	}
	if r.Errors.Total == 0 {
		fmt.Fprintf(&b, "  errors: none\n")
	} else {
		var kinds []string
		for k, v := range r.Errors.ByKind {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
		}
		slices.Sort(kinds)
		fmt.Fprintf(&b, "  errors: %d (%s)\n", r.Errors.Total, strings.Join(kinds, ", "))
		for _, f := range r.Errors.First {
			fmt.Fprintf(&b, "    %s\n", f)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// ratioText renders a figure's echo ratio: a percentage of the echo for
// rates, a multiple for the rest, "" when there is none.
func (r *Report) ratioText(k, kind string) string {
	v, ok := r.EchoRatio.get(k)
	if !ok {
		return ""
	}
	if kind == "%" {
		return fmt.Sprintf("%.2f%%", 100*v)
	}
	return num(v) + "×"
}

// num renders a figure with as many digits as it deserves.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func mib(kib int64) float64 { return float64(kib) / 1024 }
