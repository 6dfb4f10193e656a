package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// EchoResult is the machine's frame limit, measured in the same run as a
// workload with raw gorilla/websocket connections to an echo server in the
// generator's process, over loopback: frames of the size of a send, echoed
// untouched — no JSON, no storage.
type EchoResult struct {
	Conns      int `json:"conns"`
	Window     int `json:"window"`
	FrameBytes int `json:"frame_bytes"`
	// RoundTrips is how many frames came back in the throughput phase:
	// Conns connections, each with Window frames in flight.
	RoundTrips     int64   `json:"round_trips"`
	Seconds        float64 `json:"seconds"`
	RoundTripsPerS float64 `json:"round_trips_per_s"`
	// CPUMicrosPerRT is the process's CPU per round trip in that phase,
	// both ends included.
	CPUMicrosPerRT float64 `json:"cpu_us_per_rt"`
	// RTT is the round trip of one connection with one frame in flight
	// (the latency floor), in milliseconds.
	RTT Summary `json:"rtt_ms"`
}

// echoServer serves /echo on a loopback port: every message is written
// back as it came.
type echoServer struct {
	url string
	srv *http.Server
	ln  net.Listener
}

func startEchoServer() (*echoServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	up := websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			mt, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if err := ws.WriteMessage(mt, data); err != nil {
				return
			}
		}
	})
	s := &echoServer{url: "ws://" + ln.Addr().String() + "/echo", srv: &http.Server{Handler: mux}, ln: ln}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *echoServer) close() { s.srv.Close() }

// echoFrame is what the echo carries: a send frame as a workload writes it.
func echoFrame(body string) []byte {
	return protocol.MustEncode(&protocol.Send{Ref: protocol.Ref{ID: "s123456"}, Conv: "d:bench-a0001:bench-b0001",
		MsgID: "123456", Body: body, ClientTS: time.Now().UnixMilli()})
}

// runEcho measures the echo: a throughput phase of conns connections with
// window frames in flight each, for three quarters of length (or count
// round trips), then one connection with one frame in flight for the rest
// (or count/4 round trips) for the unloaded round trip.
func runEcho(ctx context.Context, conns, window int, length time.Duration, count int64, body string) (*EchoResult, error) {
	srv, err := startEchoServer()
	if err != nil {
		return nil, err
	}
	defer srv.close()
	frame := echoFrame(body)
	res := &EchoResult{Conns: conns, Window: window, FrameBytes: len(frame)}

	loadLen, pingLen := length*3/4, length/4
	cpu0 := selfCPU()
	n, elapsed, _, err := echoPhase(ctx, srv.url, frame, conns, window, loadLen, count, false)
	if err != nil {
		return nil, err
	}
	cpu := selfCPU() - cpu0
	res.RoundTrips, res.Seconds = n, round(elapsed.Seconds(), 3)
	if elapsed > 0 {
		res.RoundTripsPerS = float64(n) / elapsed.Seconds()
	}
	if n > 0 {
		res.CPUMicrosPerRT = round(float64(cpu.Microseconds())/float64(n), 2)
	}
	res.RoundTripsPerS = round(res.RoundTripsPerS, 1)

	_, _, rtts, err := echoPhase(ctx, srv.url, frame, 1, 1, pingLen, max(count/4, min(count, 1)), true)
	if err != nil {
		return nil, err
	}
	res.RTT = summarize(rtts)
	return res, nil
}

// echoPhase runs conns echo connections with window frames in flight each
// until length has passed or count frames came back (0: no bound). It
// returns the round trips, the time they took and, if keep, every round
// trip's latency.
func echoPhase(ctx context.Context, url string, frame []byte, conns, window int, length time.Duration, count int64, keep bool) (int64, time.Duration, []time.Duration, error) {
	d := newDialer(4096)
	wss := make([]*websocket.Conn, conns)
	for i := range wss {
		ws, _, err := d.DialContext(ctx, url, nil)
		if err != nil {
			for _, w := range wss[:i] {
				w.Close()
			}
			return 0, 0, nil, fmt.Errorf("echo: %w", err)
		}
		wss[i] = ws
	}
	var (
		done     atomic.Int64 // round trips
		issued   atomic.Int64 // frames written, for the count bound
		stop     = make(chan struct{})
		stopOnce sync.Once
		mu       sync.Mutex
		rtts     []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	halt := func(err error) {
		stopOnce.Do(func() { close(stop) })
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
	}
	start := now()
	timer := time.AfterFunc(length, func() { halt(nil) })
	defer timer.Stop()
	for _, ws := range wss {
		slots := make(chan time.Duration, window) // send times of frames in flight, in order
		wg.Add(2)
		go func() { // writer
			defer wg.Done()
			for {
				if count > 0 && issued.Add(1) > count {
					return
				}
				select {
				case <-stop:
					return
				case slots <- now():
				}
				if err := ws.WriteMessage(websocket.TextMessage, frame); err != nil {
					select {
					case <-stop:
					default:
						halt(err)
					}
					return
				}
			}
		}()
		go func() { // reader
			defer wg.Done()
			var local []time.Duration
			defer func() {
				mu.Lock()
				rtts = append(rtts, local...)
				mu.Unlock()
			}()
			for {
				if _, _, err := ws.ReadMessage(); err != nil {
					select {
					case <-stop:
					default:
						halt(err)
					}
					return
				}
				sentAt := <-slots
				if keep {
					local = append(local, now()-sentAt)
				}
				if n := done.Add(1); count > 0 && n >= count {
					halt(nil)
				}
			}
		}()
	}
	<-stop
	elapsed := now() - start
	n := done.Load()
	for _, ws := range wss {
		ws.Close()
	}
	wg.Wait()
	if firstErr != nil && !errors.Is(firstErr, net.ErrClosed) {
		return 0, 0, nil, fmt.Errorf("echo: %w", firstErr)
	}
	return n, elapsed, rtts, nil
}
