package main

import (
	"sync"
	"time"
)

// meter measures the server's process (when a pid is given) and the
// generator's own CPU between begin and end.
type meter struct {
	pid     int
	sampler *sampler

	mu                 sync.Mutex
	t0, t1             time.Duration
	self0, self1       time.Duration
	srv0, srv1         procSample
	began, ended, ok01 bool
}

// newMeter starts sampling pid's resident set (0: no server sampling).
func newMeter(pid int) *meter {
	return &meter{pid: pid, sampler: startSampler(pid, 100*time.Millisecond)}
}

// begin marks the start of the measurement.
func (m *meter) begin() {
	p, ok := m.sampler.sample()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.t0, m.self0, m.srv0, m.ok01, m.began = now(), selfCPU(), p, ok, true
}

// end marks its end (once).
func (m *meter) end() {
	p, ok := m.sampler.sample()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		return
	}
	if !m.began { // the run ended before the measurement began
		m.t0, m.self0, m.srv0, m.ok01, m.began = now(), selfCPU(), p, ok, true
	}
	m.t1, m.self1, m.srv1, m.ok01, m.ended = now(), selfCPU(), p, m.ok01 && ok, true
}

// serverCPU is the server's CPU time between begin and end.
func (m *meter) serverCPU() (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.srv1.CPU - m.srv0.CPU, m.ok01 && m.ended
}

// report stops the sampling and fills the server's process figures and
// the generator's CPU.
func (m *meter) report(r *Report) {
	m.end()
	maxRSS, err := m.sampler.close()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.t1 > m.t0 {
		r.GeneratorCPUPct = round(100*float64(m.self1-m.self0)/float64(m.t1-m.t0), 1)
	}
	if m.pid == 0 {
		return
	}
	if err != nil || !m.ok01 {
		r.Notes = append(r.Notes, "could not sample the server's process: "+errText(err))
		return
	}
	p := &ServerProc{PID: m.pid, RSSStartKiB: m.srv0.RSSKiB, RSSEndKiB: m.srv1.RSSKiB, RSSMaxKiB: max(maxRSS, m.srv0.RSSKiB, m.srv1.RSSKiB)}
	if m.t1 > m.t0 {
		p.CPUPct = round(100*float64(m.srv1.CPU-m.srv0.CPU)/float64(m.t1-m.t0), 1)
	}
	r.ServerProc = p
}

func errText(err error) string {
	if err == nil {
		return "no sample"
	}
	return err.Error()
}
