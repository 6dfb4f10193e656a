package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/imcore/im/server/ownership"
)

// TestSettleWaitsForThePlacement: settle answers once each node's own
// /status shows exactly the shards placement gives it, not before.
func TestSettleWaitsForThePlacement(t *testing.T) {
	want := ownership.Placement([]string{"a", "b"})
	var looks atomic.Int64
	node := func(id string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("services") != "0" {
				t.Errorf("settle asked %s: want the services left unchecked", r.URL)
			}
			// Node b holds everything until the eighth look in all, as a node
			// does before a new one took its share.
			shards := []int{}
			switch {
			case looks.Add(1) < 8 && id == "b":
				for s := range ownership.Shards {
					shards = append(shards, s)
				}
			case looks.Load() >= 8:
				for _, s := range want[id] {
					shards = append(shards, int(s))
				}
			}
			json.NewEncoder(w).Encode(map[string]any{"nodes": []map[string]any{{"id": "other"}, {"id": id, "shards": shards}}})
		}))
	}
	a, b := node("a"), node("b")
	defer a.Close()
	defer b.Close()
	var out, errs bytes.Buffer
	code := runSettle([]string{"-node", "a=" + a.URL, "-node", "b=" + b.URL, "-poll", "1ms", "-timeout", "10s"}, &out, &errs)
	if code != 0 || !strings.HasPrefix(out.String(), "settled ") {
		t.Fatalf("exit %d, %q %q", code, out.String(), errs.String())
	}
	if looks.Load() < 8 {
		t.Errorf("settled after %d looks, before the shards moved", looks.Load())
	}

	out.Reset()
	code = runSettle([]string{"-node", "a=" + a.URL, "-node", "c=" + b.URL, "-poll", "1ms", "-timeout", "50ms"}, &out, &errs)
	if code != 1 || !strings.HasPrefix(out.String(), "unsettled ") {
		t.Errorf("a node missing from the placement: exit %d, %q", code, out.String())
	}
}
