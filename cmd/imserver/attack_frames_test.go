package main

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// Connections that send garbage instead of a hello are closed after a few
// frames (and at once for a frame over the hello size); reconnecting does
// not buy more, as failed frames draw from a bucket per address.
func TestAttackGarbageBeforeHello(t *testing.T) {
	p := startServer(t, "-data", t.TempDir())
	garbage := []byte(strings.Repeat("{", 3000)) // not JSON; under the 4 KiB hello frame
	big := []byte(strings.Repeat("x", 61<<10))   // the 61 KB frames
	var conns, frames atomic.Int64
	var share float64
	baselineThenAttack(t, p.addr, "4 clients sending garbage before hello, reconnecting", 3*time.Second, func(stop <-chan struct{}) {
		share = cpuShare(t, p.cmd.Process.Pid, func() {
			var wg sync.WaitGroup
			for a := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						ws, _, err := dialerFrom(fmt.Sprintf("127.0.0.%d", 3+a)).Dial("ws://"+p.addr+"/ws", nil)
						if err != nil {
							continue
						}
						conns.Add(1)
						go func() { // drain the answers
							for {
								if _, _, err := ws.ReadMessage(); err != nil {
									return
								}
							}
						}()
						frame := garbage
						if i%2 == 1 {
							frame = big
						}
						for {
							ws.SetWriteDeadline(time.Now().Add(time.Second))
							if ws.WriteMessage(websocket.TextMessage, frame) != nil {
								break
							}
							if frames.Add(1); frames.Load() > 1_000_000 {
								break
							}
						}
						ws.Close()
					}
				}()
			}
			wg.Wait()
		})
	})
	m := serverMetrics(t, p.addr)
	read := m[`im_frames_in_total{type="bad_frame"}`]
	upgraded := m[`im_disconnects_total{reason="pre_hello"}`]
	turned := m[`im_connections_refused_total{reason="penalty"}`]
	t.Logf("garbage before hello: the attackers opened %d WebSockets and wrote %d frames; the server read %.0f of them, closed %.0f connections for failing before hello and turned %.0f connection attempts away at accept; server CPU %.0f%% of a core",
		conns.Load(), frames.Load(), read, upgraded, turned, 100*share)
	if read > 5*float64(conns.Load())+100 {
		t.Errorf("the server read %.0f garbage frames from %d connections: they are not cut off", read, conns.Load())
	}
}

// One user flooding typing into a large group from several connections:
// each member gets at most one indicator per typing interval.
func TestAttackTypingFloodIsThrottled(t *testing.T) {
	p := startServer(t, "-data", t.TempDir())
	const size, online = 1024, 20
	owner := dialHello(t, p.addr, "mallory", "owner")
	var members []string
	for i := range size - 1 {
		members = append(members, fmt.Sprintf("member%04d", i))
	}
	f, err := owner.request(&protocol.CreateGroup{Ref: protocol.Ref{ID: "g"}, Title: "big", Members: members}, "g")
	if err != nil {
		t.Fatalf("create a group of %d: %v", size, err)
	}
	conv := f.(*protocol.Group).Conv
	var received atomic.Int64
	var readers sync.WaitGroup
	for i := range online {
		c := dialHello(t, p.addr, members[i], "d")
		defer c.ws.Close()
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				_, data, err := c.ws.ReadMessage()
				if err != nil {
					return
				}
				if strings.Contains(string(data), `"type":"typing"`) {
					received.Add(1)
				}
			}
		}()
	}
	const flood = 3 * time.Second
	var sent atomic.Int64
	start := time.Now()
	baselineThenAttack(t, p.addr, "typing flood into a 1024-member group from 4 connections", flood, func(stop <-chan struct{}) {
		var wg sync.WaitGroup
		for d := range 4 {
			c := dialHello(t, p.addr, "mallory", fmt.Sprintf("flood%d", d))
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.ws.Close()
				frame := protocol.MustEncode(&protocol.Typing{Conv: conv})
				go func() { // drain whatever comes back
					for {
						if _, _, err := c.ws.ReadMessage(); err != nil {
							return
						}
					}
				}()
				for {
					select {
					case <-stop:
						return
					default:
					}
					c.ws.SetWriteDeadline(time.Now().Add(time.Second))
					if c.ws.WriteMessage(websocket.TextMessage, frame) != nil {
						return
					}
					sent.Add(1)
				}
			}()
		}
		wg.Wait()
	})
	elapsed := time.Since(start) // the flood began within it
	// A last barrier: every member's connection has had time to take what
	// was relayed once a frame sent after the flood comes back.
	owner.request(&protocol.History{Ref: protocol.Ref{ID: "b"}, Conv: conv}, "b")
	time.Sleep(100 * time.Millisecond)
	perMember := float64(received.Load()) / online
	allowed := float64(elapsed/(300*time.Millisecond)) + 1
	t.Logf("typing flood: %d frames sent in %v from 4 connections (%.0f/s); %d relayed to %d online members, %.1f each (at most %.0f allowed)",
		sent.Load(), elapsed.Round(time.Millisecond), float64(sent.Load())/elapsed.Seconds(), received.Load(), online, perMember, allowed)
	if perMember > allowed {
		t.Fatalf("each member got %.1f typing indicators in %v; the throttle allows %.0f", perMember, elapsed, allowed)
	}
}

// Group floods: one user cannot create groups or add members without
// bound; it is answered rate_limited with a retry hint once its quota is
// spent.
func TestAttackGroupFloodHitsTheQuota(t *testing.T) {
	p := startServer(t, "-data", t.TempDir())
	var created, limited atomic.Int64
	members := make([]string, 1023)
	for i := range members {
		members[i] = fmt.Sprintf("member%04d", i)
	}
	baselineThenAttack(t, p.addr, "two connections creating groups of 1024 members", 3*time.Second, func(stop <-chan struct{}) {
		var wg sync.WaitGroup
		for d := range 2 {
			c := dialHello(t, p.addr, "mallory", fmt.Sprintf("flood%d", d))
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.ws.Close()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					id := fmt.Sprintf("c%d", i)
					_, err := c.request(&protocol.CreateGroup{Ref: protocol.Ref{ID: id}, Title: "spam", Members: members}, id)
					switch {
					case err == nil:
						created.Add(1)
					case strings.Contains(err.Error(), "rate_limited"):
						limited.Add(1)
					default:
						t.Errorf("create: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
	})
	t.Logf("group flood: %d groups of 1024 created, %d creations refused rate_limited", created.Load(), limited.Load())
	// The default quota: 10,000 membership changes an hour; a group of
	// 1024 costs 1023.
	if created.Load() > 10_000/1023 || limited.Load() == 0 {
		t.Fatalf("%d groups of 1024 created in 3 s, %d refused: the quota did not hold", created.Load(), limited.Load())
	}
	// Small groups: the quota of a hundred creations an hour.
	c := dialHello(t, p.addr, "eve", "d")
	var small int
	var e error
	for small = 0; small < 1000; small++ {
		id := fmt.Sprintf("s%d", small)
		if _, e = c.request(&protocol.CreateGroup{Ref: protocol.Ref{ID: id}, Title: "small", Members: []string{"bob"}}, id); e != nil {
			break
		}
	}
	if small != 100 || e == nil || !strings.Contains(e.Error(), "rate_limited") {
		t.Fatalf("created %d small groups before %v; want 100, then rate_limited", small, e)
	}
}
