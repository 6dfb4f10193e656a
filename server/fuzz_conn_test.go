package server_test

import (
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// heapCeiling is far above what a server serving a handful of connections
// needs; crossing it means some input made the server hold on to memory.
const heapCeiling = 512 << 20

// FuzzConnection feeds arbitrary frames to a live connection, before or
// after its hello. The server must not panic (a panic ends the test
// binary), must answer or close that connection, must keep serving another
// connection, and must not grow its heap without bound.
func FuzzConnection(f *testing.F) {
	for _, seed := range []string{
		`{"type":"hello","id":"1","protocol":1,"user":"fuzzer","device":"f"}`,
		`{"type":"send","id":"2","conv":"d:fuzzer:witness","msg_id":"m1","body":"hi","client_ts":1}`,
		`{"type":"send","id":"3","conv":"d:alice:fuzzer","msg_id":"m2","body":"` + strings.Repeat("x", 5000) + `"}`,
		`{"type":"history","id":"4","conv":"d:alice:fuzzer","before_seq":5,"limit":1000}`,
		`{"type":"history","id":"5","conv":"d:alice:fuzzer","after_seq":-1}`,
		`{"type":"delivered","id":"6","marks":[{"conv":"d:alice:fuzzer","seq":99}]}`,
		`{"type":"read","marks":[{"conv":"d:alice:fuzzer","seq":9223372036854775807}]}`,
		`{"type":"read","id":"7","marks":[]}`,
		`{"type":"receipts","id":"8","conv":"d:alice:fuzzer"}`,
		`{"type":"typing","conv":"d:fuzzer:witness"}`,
		`{"type":"sync","id":"9","since":0}`,
		`{"type":"session_op","id":"10","conv":"d:alice:fuzzer","op":"pin"}`,
		`{"type":"create_group","id":"11","title":"t","members":["a"]}`,
		`{"type":"group_op","id":"12","conv":"g:x","op":"leave"}`,
		`{"type":"send","id":{"nested":[1,2,3]}}`,
		`{"type":null}`, `[]`, `"str"`, `{`, ``, "\x00\xff",
		`{"type":"send","id":"13","conv":"d:fuzzer:witness","msg_id":"\u0000","body":"\ud800"}`,
	} {
		f.Add(false, []byte(seed))
		f.Add(true, []byte(seed))
	}
	env := servertest.Start(f, func(c *server.Config) {
		c.Gateway.RateLimit = 1e9
		c.Gateway.RateBurst = 1e9
	})
	witness := env.Dial(f, "witness", "w")
	f.Fuzz(func(t *testing.T, beforeHello bool, frame []byte) {
		ws, _, err := websocket.DefaultDialer.Dial(env.URL, nil)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer ws.Close()
		if !beforeHello {
			writeFrame(t, ws, protocol.MustEncode(&protocol.Hello{Ref: protocol.Ref{ID: "h"}, Protocol: 1, User: "fuzzer", Device: "f"}))
			readUntil(t, ws, "h")
		}
		writeFrame(t, ws, frame)
		// The connection answers a following request, or has been closed
		// (an oversize frame, a refused hello); it must not hang.
		writeFrame(t, ws, []byte(`{"type":"history","id":"barrier","conv":"-"}`))
		readUntil(t, ws, "barrier")

		witness.T = t
		witness.RequestError(&protocol.History{Conv: "-"}, protocol.CodeInvalid)
		witness.Barrier()

		var mem runtime.MemStats
		runtime.ReadMemStats(&mem)
		if mem.HeapInuse > heapCeiling {
			t.Fatalf("heap in use %d MiB after input of %d bytes", mem.HeapInuse>>20, len(frame))
		}
	})
}

func writeFrame(t *testing.T, ws *websocket.Conn, data []byte) {
	ws.SetWriteDeadline(time.Now().Add(servertest.Timeout))
	if err := ws.WriteMessage(websocket.TextMessage, data); err != nil && !closedByServer(err) {
		t.Fatalf("write: %v", err)
	}
}

// readUntil reads until the answer with id or until the server closes.
func readUntil(t *testing.T, ws *websocket.Conn, id string) {
	ws.SetReadDeadline(time.Now().Add(servertest.Timeout))
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("no answer to %q and no close within %v", id, servertest.Timeout)
			}
			return // closed by the server
		}
		f, gotID, perr := protocol.DecodeServerFrame(data)
		if perr != nil {
			t.Fatalf("server sent an undecodable frame %q", data)
		}
		if gotID == id {
			return
		}
		_ = f
	}
}

func closedByServer(err error) bool {
	var ce *websocket.CloseError
	return errors.As(err, &ce) || errors.Is(err, websocket.ErrCloseSent) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "connection reset")
}
