package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Encode returns the JSON text of f with its "type" field first.
func Encode(f Frame) ([]byte, error) {
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

// envelope is the part of every frame read before its type is known.
type envelope struct {
	Type json.RawMessage `json:"type"`
	ID   json.RawMessage `json:"id"`
}

func decode(data []byte, registry map[string]func() Frame) (Frame, string, *Error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, "", Errorf(CodeBadFrame, "a frame must be a JSON object")
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, "", Errorf(CodeBadFrame, "not valid JSON: %s", plainJSONError(err))
	}
	var id string
	if len(env.ID) > 0 && !isNull(env.ID) {
		if err := json.Unmarshal(env.ID, &id); err != nil {
			return nil, "", Errorf(CodeBadFrame, `"id" must be a string`)
		}
	}
	if len(env.Type) == 0 || isNull(env.Type) {
		return nil, id, Errorf(CodeBadFrame, `missing "type"`)
	}
	var typ string
	if err := json.Unmarshal(env.Type, &typ); err != nil {
		return nil, id, Errorf(CodeBadFrame, `"type" must be a string`)
	}
	newFrame, ok := registry[typ]
	if !ok {
		return nil, id, Errorf(CodeBadFrame, "unknown type %q", truncate(typ, 40))
	}
	f := newFrame()
	if err := json.Unmarshal(data, f); err != nil {
		return nil, id, Errorf(CodeBadFrame, "%s: %s", typ, plainJSONError(err))
	}
	return f, id, nil
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// plainJSONError turns a decoding error into words fit for an error frame.
func plainJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field != "" {
			return fmt.Sprintf("field %q must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		return fmt.Sprintf("a value must be %s, not %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return fmt.Sprintf("%s at byte %d", syntaxErr.Error(), syntaxErr.Offset)
	}
	return err.Error()
}

// jsonKind names a Go kind the way a JSON author would.
func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "int", "int64", "int32":
		return "an integer"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return goKind
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
