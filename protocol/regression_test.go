// Regression tests for decoder and encoder bugs found by the fuzz targets.

package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/imcore/im/protocol"
)

// JSON keys are case-sensitive and PROTOCOL.md names the fields exactly
// ("every frame has a string field type", "unknown fields are ignored"), but
// decode uses encoding/json, which also matches keys case-insensitively. The
// fuzz targets find this within a second.
func TestKeysAreCaseSensitive(t *testing.T) {
	// No "type" field: bad_frame, echoing the id.
	f, id, perr := protocol.DecodeClientFrame([]byte(`{"Type":"hello","id":"1","protocol":1,"device":"laptop"}`))
	if perr == nil || perr.Code != protocol.CodeBadFrame || id != "1" {
		t.Errorf(`{"Type":"hello",...} decoded as %#v, %q, %v; want bad_frame with id "1"`, f, id, perr)
	}
	// The frame's type is "send"; "TYPE" is an unknown field.
	f, _, perr = protocol.DecodeClientFrame([]byte(`{"type":"send","TYPE":"hello","id":"1"}`))
	if perr == nil && f.FrameType() != "send" {
		t.Errorf(`{"type":"send","TYPE":"hello"} decoded as a %q frame`, f.FrameType())
	}
	// The answer must echo "id", not "ID".
	f, id, perr = protocol.DecodeClientFrame([]byte(`{"type":"send","id":"7","ID":"8","conv":"g:x","msg_id":"m","body":"b"}`))
	if perr != nil || id != "7" || f.(*protocol.Send).ID != "7" {
		t.Errorf(`"id":"7","ID":"8" decoded as %#v, id %q, %v; want id "7"`, f, id, perr)
	}
	// An unknown field "BODY" must not replace the body.
	f, _, perr = protocol.DecodeClientFrame([]byte(`{"type":"send","id":"7","conv":"g:x","msg_id":"m","body":"b","BODY":"smuggled"}`))
	if perr != nil || f.(*protocol.Send).Body != "b" {
		t.Errorf(`"body":"b","BODY":"smuggled" decoded as %#v, %v; want body "b"`, f, perr)
	}
	// The same on the client side.
	f, _, perr = protocol.DecodeServerFrame([]byte(`{"tYpe":"sent","id":"7","seq":1}`))
	if perr == nil {
		t.Errorf(`{"tYpe":"sent",...} decoded as %#v; want bad_frame`, f)
	}
}

// Encode of a nil frame pointer (a programming error, e.g. a handler that
// returns a typed nil *OK) yields `{"type":"hello",ull` and no error; the
// server's MustEncode would write that text to the socket.
func TestEncodeNilFrameFails(t *testing.T) {
	for _, f := range []protocol.Frame{(*protocol.Hello)(nil), (*protocol.OK)(nil), (*protocol.ErrorFrame)(nil)} {
		b, err := protocol.Encode(f)
		if err == nil && !json.Valid(b) {
			t.Errorf("Encode(%T(nil)) = %q, nil error: invalid JSON", f, b)
		}
	}
}
