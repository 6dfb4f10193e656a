package client

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// fakeServer speaks just enough of the protocol to script what a client
// receives, exactly: it welcomes, answers sync, history, marks and
// receipts with empty answers, runs the script, and records every frame
// the client sent.
type fakeServer struct {
	t      *testing.T
	URL    string
	script func(push func(protocol.Frame))

	mu       sync.Mutex
	received []protocol.Frame
	changed  chan struct{}
}

func startFakeServer(t *testing.T, script func(push func(protocol.Frame))) *fakeServer {
	fs := &fakeServer{t: t, script: script, changed: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(fs.serve))
	t.Cleanup(srv.Close)
	fs.URL = "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	return fs
}

func (fs *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	var writeMu sync.Mutex
	push := func(f protocol.Frame) {
		writeMu.Lock()
		defer writeMu.Unlock()
		ws.WriteMessage(websocket.TextMessage, protocol.MustEncode(f))
	}
	_, data, err := ws.ReadMessage()
	if err != nil {
		return
	}
	f, _, _ := protocol.DecodeClientFrame(data)
	hello, ok := f.(*protocol.Hello)
	if !ok {
		return
	}
	push(&protocol.Welcome{Ref: hello.Ref, User: hello.User, Device: hello.Device})
	go fs.script(push)
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		f, _, perr := protocol.DecodeClientFrame(data)
		if perr != nil {
			fs.t.Errorf("the client sent an undecodable frame %q: %v", data, perr)
			continue
		}
		fs.record(f)
		if answer := fs.answer(f); answer != nil {
			push(answer)
		}
	}
}

// answer returns the empty answer to a request.
func (fs *fakeServer) answer(f protocol.Frame) protocol.Frame {
	switch f := f.(type) {
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

func (fs *fakeServer) record(f protocol.Frame) {
	fs.mu.Lock()
	fs.received = append(fs.received, f)
	fs.mu.Unlock()
	select {
	case fs.changed <- struct{}{}:
	default:
	}
}

// frames returns the frames of type typ the client sent so far.
func (fs *fakeServer) frames(typ string) []protocol.Frame {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var out []protocol.Frame
	for _, f := range fs.received {
		if f.FrameType() == typ {
			out = append(out, f)
		}
	}
	return out
}
