package client

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// scriptServer is a fake server whose every answer a test can script: the
// handler sees each frame the client sends (after the hello) and pushes
// what it wants; what it does not handle gets defaultAnswer. It records
// every frame with the connection it came on.
type scriptServer struct {
	t      *testing.T
	URL    string
	onOpen func(c *scriptConn)                        // after the welcome
	handle func(c *scriptConn, f protocol.Frame) bool // true: handled

	mu       sync.Mutex
	conns    int
	open     []*scriptConn
	received []scriptFrame
	seqs     map[string]int64            // default send answers: next seq per conv
	sentSeq  map[string]map[string]int64 // default send answers: msg_id → seq per conv
}

type scriptFrame struct {
	conn  int
	frame protocol.Frame
}

// scriptConn is one connection of a scriptServer.
type scriptConn struct {
	n     int // 1 for the first connection
	ws    *websocket.Conn
	mu    sync.Mutex
	srv   *scriptServer
	close func()
}

func (c *scriptConn) push(f protocol.Frame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(f))
}

func startScriptServer(t *testing.T) *scriptServer {
	s := &scriptServer{t: t, seqs: map[string]int64{}, sentSeq: map[string]map[string]int64{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	return s
}

func (s *scriptServer) serve(w http.ResponseWriter, r *http.Request) {
	ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	s.mu.Lock()
	s.conns++
	c := &scriptConn{n: s.conns, ws: ws, srv: s}
	s.open = append(s.open, c)
	s.mu.Unlock()
	c.close = func() { ws.Close() }
	_, data, err := ws.ReadMessage()
	if err != nil {
		return
	}
	f, _, _ := protocol.DecodeClientFrame(data)
	hello, ok := f.(*protocol.Hello)
	if !ok {
		return
	}
	c.push(&protocol.Welcome{Ref: hello.Ref, User: hello.User, Device: hello.Device})
	if s.onOpen != nil {
		s.onOpen(c)
	}
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		f, _, perr := protocol.DecodeClientFrame(data)
		if perr != nil {
			s.t.Errorf("the client sent an undecodable frame %q: %v", data, perr)
			continue
		}
		s.mu.Lock()
		s.received = append(s.received, scriptFrame{conn: c.n, frame: f})
		s.mu.Unlock()
		if s.handle != nil && s.handle(c, f) {
			continue
		}
		if answer := s.defaultAnswer(f); answer != nil {
			c.push(answer)
		}
	}
}

// defaultAnswer answers like an empty, well-behaved server; a send is
// stored with the next seq of its conversation (idempotent by msg_id).
func (s *scriptServer) defaultAnswer(f protocol.Frame) protocol.Frame {
	switch f := f.(type) {
	case *protocol.Send:
		return s.store(f)
	case *protocol.Sync:
		return &protocol.Sessions{Ref: f.Ref, Sessions: []protocol.Session{}, Cursor: f.Since}
	case *protocol.History:
		return &protocol.Messages{Ref: f.Ref, Conv: f.Conv, Messages: []protocol.Message{}}
	case *protocol.ReceiptsRequest:
		return &protocol.ReceiptsReply{Ref: f.Ref, Conv: f.Conv, Members: []protocol.MemberReceipt{}}
	case *protocol.Delivered:
		if f.ID != "" {
			return &protocol.OK{Ref: f.Ref}
		}
	case *protocol.Read:
		if f.ID != "" {
			return &protocol.OK{Ref: f.Ref}
		}
	}
	return nil
}

// store is the default answer to a send.
func (s *scriptServer) store(f *protocol.Send) *protocol.Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	byID := s.sentSeq[f.Conv]
	if byID == nil {
		byID = map[string]int64{}
		s.sentSeq[f.Conv] = byID
	}
	seq, ok := byID[f.MsgID]
	if !ok {
		s.seqs[f.Conv]++
		seq = s.seqs[f.Conv]
		byID[f.MsgID] = seq
	}
	return &protocol.Sent{Ref: f.Ref, Conv: f.Conv, MsgID: f.MsgID, Seq: seq, ServerTS: 1000 + seq}
}

// conn returns connection n (1 for the first).
func (s *scriptServer) conn(n int) *scriptConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[n-1]
}

// frames returns the frames of type typ the client sent so far.
func (s *scriptServer) frames(typ string) []protocol.Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []protocol.Frame
	for _, r := range s.received {
		if r.frame.FrameType() == typ {
			out = append(out, r.frame)
		}
	}
	return out
}

// chatMsg is message seq of conv from from.
func chatMsg(conv string, seq int64, from string) protocol.Message {
	return protocol.Message{Conv: conv, Seq: seq, MsgID: fmt.Sprintf("m%d", seq), From: from, Body: fmt.Sprintf("message %d", seq), ClientTS: seq, ServerTS: 1000 + seq}
}

// heldSeqs returns the set of stored seqs of conv.
func heldSeqs(p *profile, conv string) map[int64]bool {
	out := map[int64]bool{}
	for _, m := range p.messages(conv) {
		if m.Seq > 0 {
			out[m.Seq] = true
		}
	}
	return out
}
