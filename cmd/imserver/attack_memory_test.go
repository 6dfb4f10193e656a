package main

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// memoryBoundKB is the most the floods below may grow the server's
// resident memory by: four attackers, each holding at most an output queue
// of 4 MiB and a page of 512 KiB, times four for the garbage collector's
// headroom and the copies an answer goes through — against 2.8 GB in 10 s
// before the byte budgets.
const memoryBoundKB = 128 << 10

// historyFlood is the attack of the issue: a member of a conversation of
// 200 messages of 4096 '<' (24 KB each once JSON-escaped) asks for the
// whole of it every 5 ms, and reads not at all (bytesPerSecond 0) or at
// bytesPerSecond, counting what it reads in received.
func historyFlood(t *testing.T, addr, ip string, bytesPerSecond int, received *atomic.Int64, stop <-chan struct{}) {
	ws, _, err := dialerFrom(ip).Dial("ws://"+addr+"/ws", nil)
	if err != nil {
		t.Errorf("attacker: %v", err)
		return
	}
	defer ws.Close()
	ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(&protocol.Hello{Protocol: 1, User: "mallory", Device: "d" + ip[len("127.0.0."):]}))
	if _, data, err := ws.ReadMessage(); err != nil || !strings.Contains(string(data), `"welcome"`) {
		t.Errorf("attacker's hello: %s %v", data, err)
		return
	}
	if bytesPerSecond > 0 {
		go func() {
			for {
				_, data, err := ws.ReadMessage()
				if err != nil {
					return
				}
				received.Add(int64(len(data)))
				time.Sleep(time.Duration(len(data)) * time.Second / time.Duration(bytesPerSecond))
			}
		}()
	}
	ask := protocol.MustEncode(&protocol.History{Ref: protocol.Ref{ID: "h"}, Conv: "d:alice:mallory", Limit: 200})
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		// A client that does not read is soon not read from either: its
		// writes block once the socket buffers are full.
		ws.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		if err := ws.WriteMessage(websocket.TextMessage, ask); err != nil {
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				<-stop
			}
			return
		}
	}
}

func TestAttackHistoryFloodMemoryIsBounded(t *testing.T) {
	p := startServer(t, "-data", t.TempDir())
	seedMessages(t, p.addr, "alice", "d:alice:mallory", 200, strings.Repeat("<", 4096))
	base, err := rssKB(p.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		name string
		rate int // attacker's read speed in bytes/s; 0: never reads
	}{
		{"a history flood that never reads", 0},
		{"a history flood read at 10 MB/s", 10 << 20},
	} {
		w := watchRSS(p.cmd.Process.Pid)
		var received atomic.Int64
		baselineThenAttack(t, p.addr, run.name, 4*time.Second, func(stop <-chan struct{}) {
			done := make(chan struct{}, 4)
			for _, ip := range []string{"127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"} {
				go func() { historyFlood(t, p.addr, ip, run.rate, &received, stop); done <- struct{}{} }()
			}
			for range 4 {
				<-done
			}
		})
		peak := w.end()
		t.Logf("server RSS, %s on 4 connections (%d MB read): %d MiB before, peak %d MiB (+%d MiB)", run.name, received.Load()>>20, base>>10, peak>>10, (peak-base)>>10)
		if run.rate > 0 && received.Load() < 4<<20 {
			t.Errorf("the reading attackers got only %d bytes: the attack did not happen", received.Load())
		}
		if peak-base > memoryBoundKB {
			t.Errorf("%s grew the server by %d MiB; bound %d MiB", run.name, (peak-base)>>10, memoryBoundKB>>10)
		}
	}
}
