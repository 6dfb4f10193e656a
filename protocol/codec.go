package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Encode returns the JSON text of f with its "type" field first.
func Encode(f Frame) ([]byte, error) {
	if f == nil || reflect.ValueOf(f).IsNil() {
		return nil, errors.New("encode: nil frame")
	}
	if a, ok := f.(appender); ok {
		return a.appendJSON(make([]byte, 0, a.sizeHint())), nil
	}
	body, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", f.FrameType(), err)
	}
	typ := f.FrameType()
	out := make([]byte, 0, len(body)+len(typ)+10)
	out = append(out, `{"type":"`...)
	out = append(out, typ...)
	out = append(out, '"')
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// MustEncode is Encode for frames that always marshal (all of this
// package's); it panics on a programming error.
func MustEncode(f Frame) []byte {
	b, err := Encode(f)
	if err != nil {
		panic(err)
	}
	return b
}

// clientFrames are the frames a client may send, by type.
var clientFrames = map[string]func() Frame{
	"hello":        func() Frame { return new(Hello) },
	"send":         func() Frame { return new(Send) },
	"history":      func() Frame { return new(History) },
	"delivered":    func() Frame { return new(Delivered) },
	"read":         func() Frame { return new(Read) },
	"receipts":     func() Frame { return new(ReceiptsRequest) },
	"typing":       func() Frame { return new(Typing) },
	"sync":         func() Frame { return new(Sync) },
	"session_op":   func() Frame { return new(SessionOp) },
	"create_group": func() Frame { return new(CreateGroup) },
	"group_op":     func() Frame { return new(GroupOp) },
	"settings":     func() Frame { return new(SettingsRequest) },
	"block":        func() Frame { return new(Block) },
	"unblock":      func() Frame { return new(Unblock) },
	"presence":     func() Frame { return new(PresenceRequest) },
}

// serverFrames are the frames the server may send, by type.
var serverFrames = map[string]func() Frame{
	"welcome":      func() Frame { return new(Welcome) },
	"sent":         func() Frame { return new(Sent) },
	"msg":          func() Frame { return new(MsgPush) },
	"messages":     func() Frame { return new(Messages) },
	"ok":           func() Frame { return new(OK) },
	"status":       func() Frame { return new(Status) },
	"receipts":     func() Frame { return new(ReceiptsReply) },
	"error":        func() Frame { return new(ErrorFrame) },
	"typing":       func() Frame { return new(Typing) },
	"sessions":     func() Frame { return new(Sessions) },
	"session_sync": func() Frame { return new(SessionSync) },
	"group":        func() Frame { return new(Group) },
	"settings":     func() Frame { return new(SettingsReply) },
	"presence":     func() Frame { return new(PresenceReply) },
}

// DecodeClientFrame decodes a frame sent by a client (what a server reads).
// On failure it returns the request id, when one could be read, and an
// *Error with code bad_frame.
func DecodeClientFrame(data []byte) (Frame, string, *Error) {
	return decode(data, clientFrames)
}

// DecodeServerFrame decodes a frame sent by the server (what a client reads).
func DecodeServerFrame(data []byte) (Frame, string, *Error) {
	return decode(data, serverFrames)
}

// envelope is the part of every frame read before its type is known. Both
// fields are kept raw so that a value of the wrong JSON type still lets the
// other be read.
type envelope struct {
	Type jsontext.Value `json:"type"`
	ID   jsontext.Value `json:"id"`
}

// decode reads one frame. Member names match exactly, as the protocol
// names them (encoding/json would also match "TYPE" or "Body"); a name
// given twice in one object is refused.
func decode(data []byte, registry map[string]func() Frame) (Frame, string, *Error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, "", Errorf(CodeBadFrame, "a frame must be a JSON object")
	}
	var env envelope
	if err := jsonv2.Unmarshal(data, &env); err != nil {
		return nil, "", Errorf(CodeBadFrame, "not a valid JSON object: %s", plainJSONError(err))
	}
	var id string
	if len(env.ID) > 0 && env.ID.Kind() != 'n' {
		if env.ID.Kind() != '"' || jsonv2.Unmarshal(env.ID, &id) != nil {
			return nil, "", Errorf(CodeBadFrame, `"id" must be a string`)
		}
	}
	if len(env.Type) == 0 || env.Type.Kind() == 'n' {
		return nil, id, Errorf(CodeBadFrame, `missing "type"`)
	}
	var typ string
	if env.Type.Kind() != '"' || jsonv2.Unmarshal(env.Type, &typ) != nil {
		return nil, id, Errorf(CodeBadFrame, `"type" must be a string`)
	}
	newFrame, ok := registry[typ]
	if !ok {
		return nil, id, Errorf(CodeBadFrame, "unknown type %q", truncate(typ, 40))
	}
	f := newFrame()
	if err := jsonv2.Unmarshal(data, f); err != nil {
		return nil, id, Errorf(CodeBadFrame, "%s: %s", typ, plainJSONError(err))
	}
	return f, id, nil
}

// plainJSONError turns a decoding error into words fit for an error frame.
func plainJSONError(err error) string {
	var semErr *jsonv2.SemanticError
	if errors.As(err, &semErr) && semErr.GoType != nil && semErr.JSONKind != 0 {
		where := string(semErr.JSONPointer)
		if where == "" {
			where = "the frame"
		} else {
			where = strconv.Quote(strings.TrimPrefix(where, "/"))
		}
		return fmt.Sprintf("%s must be %s, not %s", where, goKindInJSON(semErr.GoType.Kind()), jsonKindName(semErr.JSONKind))
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "json: ")
	return truncate(msg, 200)
}

// goKindInJSON names what a Go kind is written as in JSON.
func goKindInJSON(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
		return "an integer"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "an object"
	}
	return k.String()
}

// jsonKindName names a JSON value kind.
func jsonKindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return k.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
