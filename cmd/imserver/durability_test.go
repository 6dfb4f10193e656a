package main

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// wsClient is a minimal protocol client for driving the real binary.
type wsClient struct {
	ws *websocket.Conn
}

func dialHello(t *testing.T, addr, user, device string) *wsClient {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c := &wsClient{ws: ws}
	if _, err := c.request(&protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: 1, User: user, Device: device}, "h"); err != nil {
		t.Fatalf("hello: %v", err)
	}
	return c
}

// request writes f and reads until the answer with id, skipping pushes.
func (c *wsClient) request(f protocol.Frame, id string) (protocol.Frame, error) {
	c.ws.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if err := c.ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(f)); err != nil {
		return nil, err
	}
	c.ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return nil, err
		}
		g, gotID, perr := protocol.DecodeServerFrame(data)
		if perr != nil {
			return nil, perr
		}
		if gotID == id {
			if e, ok := g.(*protocol.ErrorFrame); ok {
				return nil, fmt.Errorf("error %s: %s", e.Code, e.Message)
			}
			return g, nil
		}
	}
}

// acked is a message of a load the server acknowledged.
type acked struct {
	conv, msgID string
	seq, ts     int64
}

// dialLoadSender connects sender i of a load over convs: it writes in
// convs[i%len(convs)], as one member or the other by i, from a device of
// its own.
func dialLoadSender(t *testing.T, addr string, convs []string, i int) (cl *wsClient, conv string) {
	t.Helper()
	conv = convs[i%len(convs)]
	c, _ := protocol.ParseConv(conv)
	user := c.A
	if i%2 == 1 {
		user = c.B
	}
	return dialHello(t, addr, user, fmt.Sprintf("dev%d", i)), conv
}

// load is senders writing messages over a few conversations, each on a
// connection of its own, and what the server acknowledged to them.
type load struct {
	mu    sync.Mutex
	acks  []acked
	added chan struct{} // a token after an acknowledgement
	stop  chan struct{}
	once  sync.Once // closes stop
	wg    sync.WaitGroup
}

// startLoad starts senders over convs on the server at addr (see
// dialLoadSender); each sends until end (at the latest when the test
// ends), or until a send fails, which it hands to failed.
func startLoad(t *testing.T, addr string, convs []string, senders int, failed func(error)) *load {
	l := &load{added: make(chan struct{}, 1), stop: make(chan struct{})}
	t.Cleanup(l.end)
	for i := range senders {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			cl, conv := dialLoadSender(t, addr, convs, i)
			defer cl.ws.Close()
			for j := 0; ; j++ {
				select {
				case <-l.stop:
					return
				default:
				}
				a, err := cl.sendLoad(conv, fmt.Sprintf("s%d-%d", i, j))
				if err != nil {
					failed(err)
					return
				}
				l.mu.Lock()
				l.acks = append(l.acks, a)
				l.mu.Unlock()
				select {
				case l.added <- struct{}{}:
				default:
				}
			}
		}()
	}
	return l
}

// acknowledged returns what the server acknowledged so far, in order.
func (l *load) acknowledged() []acked {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]acked(nil), l.acks...)
}

// await waits until n messages are acknowledged in all; it reports false
// when within passes first.
func (l *load) await(n int, within time.Duration) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		got := len(l.acks)
		l.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-l.added:
		case <-deadline.C:
			return false
		}
	}
}

// end stops the senders and waits for them.
func (l *load) end() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// sendLoad sends message id of a load in conv and returns its
// acknowledgement.
func (c *wsClient) sendLoad(conv, id string) (acked, error) {
	f, err := c.request(&protocol.Send{Ref: protocol.Ref{ID: id}, Conv: conv, MsgID: id, Body: "load " + id, ClientTS: 1}, id)
	if err != nil {
		return acked{}, err
	}
	s := f.(*protocol.Sent)
	return acked{conv, id, s.Seq, s.ServerTS}, nil
}

// Acceptance: a server killed with SIGKILL mid-load and restarted on the
// same data directory has every message it answered sent, with the same
// seqs, and the next seq continues.
func TestSIGKILLLosesNoAcknowledgedMessage(t *testing.T) {
	dataDir := t.TempDir()
	p := startServer(t, "-data", dataDir)
	const senders, killAfter = 8, 400
	convs := []string{"d:alice:bob", "d:alice:carol", "d:bob:carol"}
	l := startLoad(t, p.addr, convs, senders, func(error) {}) // a send the kill cut short is not acknowledged
	if !l.await(killAfter, 60*time.Second) {
		t.Fatalf("only %d sends acknowledged in 60s\n%s", len(l.acknowledged()), p.logs)
	}
	p.stop(t, syscall.SIGKILL) // while the senders are still sending
	l.end()
	acks := l.acknowledged()
	t.Logf("%d sends acknowledged before SIGKILL", len(acks))

	p2 := startServer(t, "-data", dataDir)
	reader := dialHello(t, p2.addr, "alice", "checker")
	stored := map[string]map[string]protocol.Message{} // conv → msg_id → message
	maxSeq := map[string]int64{}
	for _, conv := range convs {
		c, _ := protocol.ParseConv(conv)
		cl := reader
		if !c.HasMember("alice") {
			cl = dialHello(t, p2.addr, "bob", "checker")
		}
		var after int64
		stored[conv], after = readHistory(t, cl, conv)
		maxSeq[conv] = after
		// The sequence continues after the last stored message.
		f, err := cl.request(&protocol.Send{Ref: protocol.Ref{ID: "n"}, Conv: conv, MsgID: "after-restart", Body: "next", ClientTS: 1}, "n")
		if err != nil {
			t.Fatalf("send after restart: %v", err)
		}
		if got := f.(*protocol.Sent).Seq; got != after+1 {
			t.Fatalf("%s: next seq after restart = %d, want %d", conv, got, after+1)
		}
	}
	for _, a := range acks {
		m, ok := stored[a.conv][a.msgID]
		if !ok {
			t.Fatalf("acknowledged message %s (seq %d in %s) is missing after SIGKILL", a.msgID, a.seq, a.conv)
		}
		if m.Seq != a.seq || m.ServerTS != a.ts {
			t.Fatalf("%s: stored seq %d ts %d, acknowledged seq %d ts %d", a.msgID, m.Seq, m.ServerTS, a.seq, a.ts)
		}
	}
}

// readHistory reads the whole of conv through cl, requiring its seqs to
// run from 1 without a gap, and returns its messages by msg_id and the
// newest seq.
func readHistory(t *testing.T, cl *wsClient, conv string) (map[string]protocol.Message, int64) {
	t.Helper()
	stored := map[string]protocol.Message{}
	after := int64(0)
	for {
		f, err := cl.request(&protocol.History{Ref: protocol.Ref{ID: "h"}, Conv: conv, AfterSeq: &after, Limit: 200}, "h")
		if err != nil {
			t.Fatalf("history of %s: %v", conv, err)
		}
		page := f.(*protocol.Messages)
		for _, m := range page.Messages {
			if m.Seq != after+1 {
				t.Fatalf("%s: stored seqs jump from %d to %d", conv, after, m.Seq)
			}
			stored[m.MsgID] = m
			after = m.Seq
		}
		if !page.HasMore {
			return stored, after
		}
	}
}
