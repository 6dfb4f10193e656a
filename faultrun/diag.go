package faultrun

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// slowLeave is how long a leave may take before a run with a LogDir
// writes every node's goroutines there: a node that hands its shards
// over takes less than a second, and imserver gives up after its
// -shutdown-grace (15 s).
const slowLeave = 10 * time.Second

// diagArgs are the flags a cluster node gets in a run with a LogDir: the
// debug log (shards taken and handed over, connections) and the profiler
// on a loopback address of its own, for goroutine dumps. pprofAddr is
// that address ("" without a LogDir).
func (r *run) diagArgs() (args []string, pprofAddr string, err error) {
	if r.cfg.LogDir == "" {
		return nil, "", nil
	}
	if pprofAddr, err = FreeLoopbackAddr(); err != nil {
		return nil, "", err
	}
	return []string{"-log-level", "debug", "-pprof", pprofAddr}, pprofAddr, nil
}

// dumpGoroutines writes the goroutines of s and of every member into the
// LogDir, one file per node named after label; a node that does not
// answer is skipped.
func (r *run) dumpGoroutines(label string, s *Server) {
	for _, node := range append(r.nodes(), s) {
		if node.pprofAddr == "" {
			continue
		}
		path := filepath.Join(r.cfg.LogDir, fmt.Sprintf("%s.%s.goroutines", node.id, label))
		if err := dumpGoroutines(node.pprofAddr, path); err != nil {
			r.cfg.Logf("goroutines of %s: %v", node.Name(), err)
			continue
		}
		r.cfg.Logf("goroutines of %s: %s", node.Name(), path)
	}
}

// dumpGoroutines writes the goroutine dump of the profiler at addr to
// path.
func dumpGoroutines(addr, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/goroutine?debug=2", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
