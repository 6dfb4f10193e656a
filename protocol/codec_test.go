package protocol_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
)

type decodeFunc func([]byte) (protocol.Frame, string, *protocol.Error)

// requester is implemented by every frame that embeds protocol.Ref.
type requester interface {
	RequestID() string
}

// The frame types PROTOCOL.md names, by direction.
var (
	clientTypes = []string{
		"hello", "send", "history", "delivered", "read", "receipts",
		"typing", "sync", "session_op", "create_group", "group_op",
	}
	serverTypes = []string{
		"welcome", "sent", "msg", "messages", "ok", "status", "receipts",
		"error", "typing", "sessions", "session_sync", "group",
	}
)

func i64(v int64) *int64 { return &v }

func requestID(f protocol.Frame) string {
	if r, ok := f.(requester); ok {
		return r.RequestID()
	}
	return ""
}

func sampleMessage() protocol.Message {
	return protocol.Message{
		Conv: "d:alice:bob", Seq: 42, MsgID: "01JABCDEF", From: "alice",
		Body: "hey \"you\" \u00e9\u4e16\U0001F600 <&>", ClientTS: 1763800000000, ServerTS: 1763800000012,
	}
}

func sampleSession() protocol.Session {
	last := sampleMessage()
	return protocol.Session{
		Conv: "d:alice:bob", Kind: "direct", Title: "bob", Members: []string{"alice", "bob"},
		UnreadCount: 2, ReadSeq: 42, WriteSeq: 44, ActiveTS: 1763800000123, WriteTS: 1763800000100,
		Muted: true, MuteUntil: 1763900000000, Priority: 1, Deleted: true, MarkedUnread: true,
		Category: "promotions", SubBiz: "shop", LastMsg: &last,
		Ticks: protocol.Ticks{DeliveredSeq: 44, ReadSeq: 42},
	}
}

// clientSamples holds at least one frame of every client type, with every
// field set, plus minimal variants.
func clientSamples() []protocol.Frame {
	return []protocol.Frame{
		&protocol.Hello{Ref: protocol.Ref{ID: "1"}, Protocol: 1, User: "alice", Device: "laptop", Token: "tok.en"},
		&protocol.Hello{Ref: protocol.Ref{ID: "1"}, Protocol: 1, Device: "laptop-2_X"},
		&protocol.Send{Ref: protocol.Ref{ID: "7"}, Conv: "d:alice:bob", MsgID: "01J-xyz", Body: "hey\n\u00e9\U0001F600", ClientTS: 1763800000000},
		&protocol.Send{Ref: protocol.Ref{ID: "30"}, Conv: "d:alice:bob", MsgID: "01K-r", Body: "yes, 4pm", ClientTS: 1763800000000, ReplyTo: 41},
		&protocol.Send{Ref: protocol.Ref{ID: "33"}, Conv: "g:team", MsgID: "01K-x", Body: "👍", ClientTS: 1763800000000, Kind: protocol.KindReaction, RefSeq: 40},
		&protocol.History{Ref: protocol.Ref{ID: "5"}, Conv: "d:alice:bob", BeforeSeq: 480, Limit: 20},
		&protocol.History{Ref: protocol.Ref{ID: "6"}, Conv: "g:team", AfterSeq: i64(41), Limit: 200},
		&protocol.History{Ref: protocol.Ref{ID: "6"}, Conv: "g:team", AfterSeq: i64(0)},
		&protocol.History{Conv: "g:team"},
		&protocol.Delivered{Ref: protocol.Ref{ID: "8"}, Marks: []protocol.Mark{{Conv: "d:alice:bob", Seq: 44}, {Conv: "g:x", Seq: 1}}},
		&protocol.Delivered{Marks: []protocol.Mark{{Conv: "g:x", Seq: 0}}},
		&protocol.Read{Ref: protocol.Ref{ID: "9"}, Marks: []protocol.Mark{{Conv: "d:alice:bob", Seq: 44}}},
		&protocol.ReceiptsRequest{Ref: protocol.Ref{ID: "4"}, Conv: "g:x"},
		&protocol.Typing{Conv: "d:alice:bob"},
		&protocol.Sync{Ref: protocol.Ref{ID: "3"}, Since: 1763800000123, Limit: 200, SubBiz: "shop"},
		&protocol.Sync{Ref: protocol.Ref{ID: "3"}},
		&protocol.SessionOp{Ref: protocol.Ref{ID: "11"}, Conv: "d:alice:bob", Op: "mute", Until: 1763900000000},
		&protocol.SessionOp{Ref: protocol.Ref{ID: "11"}, Conv: "biz:shop", Op: "set_category", Category: "promotions"},
		&protocol.CreateGroup{Ref: protocol.Ref{ID: "12"}, Title: "team", Members: []string{"bob", "carol"}, Key: "k-1"},
		&protocol.GroupOp{Ref: protocol.Ref{ID: "13"}, Conv: "g:01J", Op: "add", Users: []string{"dave"}},
		&protocol.GroupOp{Ref: protocol.Ref{ID: "16"}, Conv: "g:01J", Op: "rename", Title: "core team"},
	}
}

// serverSamples holds at least one frame of every server type.
func serverSamples() []protocol.Frame {
	system := sampleMessage()
	system.Kind = protocol.KindSystem
	system.Body = "alice created the group"
	return []protocol.Frame{
		&protocol.Welcome{Ref: protocol.Ref{ID: "1"}, User: "alice", Device: "laptop", ServerTime: 1763800000000},
		&protocol.Sent{Ref: protocol.Ref{ID: "7"}, Conv: "d:alice:bob", MsgID: "01J", Seq: 42, ServerTS: 1763800000012},
		&protocol.MsgPush{Msg: sampleMessage()},
		&protocol.MsgPush{Msg: system},
		&protocol.MsgPush{Msg: protocol.Message{Conv: "g:team", Seq: 44, MsgID: "01K", From: "bob", Kind: protocol.KindDelete, RefSeq: 42, ClientTS: 1, ServerTS: 2}},
		&protocol.Messages{Ref: protocol.Ref{ID: "5"}, Conv: "d:alice:bob", Messages: []protocol.Message{{Conv: "d:alice:bob", Seq: 40, MsgID: "a", From: "bob",
			Body: "hey there", ReplyTo: 39, EditedTS: 900, Reactions: &[]protocol.Reaction{{Body: "👍", Users: []string{"bob", "carol"}}}}, {Conv: "d:alice:bob", Seq: 41, MsgID: "b", From: "bob", Deleted: true}}},
		&protocol.Messages{Ref: protocol.Ref{ID: "5"}, Conv: "d:alice:bob", Messages: []protocol.Message{sampleMessage(), system}, HasMore: true},
		&protocol.Messages{Ref: protocol.Ref{ID: "5"}, Conv: "d:alice:bob", Messages: []protocol.Message{}},
		&protocol.OK{Ref: protocol.Ref{ID: "8"}},
		&protocol.OK{Ref: protocol.Ref{ID: "11"}, Session: func() *protocol.Session { s := sampleSession(); return &s }()},
		&protocol.Status{Conv: "d:alice:bob", DeliveredSeq: 44, ReadSeq: 42},
		&protocol.ReceiptsReply{Ref: protocol.Ref{ID: "4"}, Conv: "g:x", Members: []protocol.MemberReceipt{{User: "bob", DeliveredSeq: 44, ReadSeq: 42}}},
		&protocol.ErrorFrame{Ref: protocol.Ref{ID: "7"}, Code: protocol.CodeForbidden, Message: "not a member of g:x"},
		&protocol.ErrorFrame{Code: protocol.CodeBadFrame, Message: "a frame must be a JSON object"},
		&protocol.Typing{Conv: "d:alice:bob", User: "alice"},
		&protocol.Sessions{Ref: protocol.Ref{ID: "3"}, Sessions: []protocol.Session{sampleSession(), {Conv: "g:x", Kind: "group"}}, Cursor: 1763800000123, HasMore: true, TotalUnread: 5},
		&protocol.Sessions{Ref: protocol.Ref{ID: "3"}, Sessions: []protocol.Session{}},
		&protocol.SessionSync{Cursor: 1763800000456},
		&protocol.Group{Ref: protocol.Ref{ID: "12"}, Conv: "g:01J", Title: "team", Members: []string{"alice", "bob", "carol"}},
	}
}

// firstKey returns the first key of the JSON object b and its value when that
// value is a string.
func firstKey(t *testing.T, b []byte) (key string, value any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: not a JSON object (%v, %v)", b, tok, err)
	}
	tok, err = dec.Token()
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	key, ok := tok.(string)
	if !ok {
		t.Fatalf("%s: object has no first key (%v)", b, tok)
	}
	value, err = dec.Token()
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return key, value
}

func objectKeys(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

func TestRoundTrip(t *testing.T) {
	for _, dir := range []struct {
		name    string
		decode  decodeFunc
		samples []protocol.Frame
		types   []string
	}{
		{"client", protocol.DecodeClientFrame, clientSamples(), clientTypes},
		{"server", protocol.DecodeServerFrame, serverSamples(), serverTypes},
	} {
		covered := map[string]bool{}
		for i, f := range dir.samples {
			typ := f.FrameType()
			covered[typ] = true
			t.Run(dir.name+"/"+typ, func(t *testing.T) {
				b, err := protocol.Encode(f)
				if err != nil {
					t.Fatalf("Encode #%d: %v", i, err)
				}
				if !json.Valid(b) {
					t.Fatalf("Encode #%d gave invalid JSON: %s", i, b)
				}
				if key, val := firstKey(t, b); key != "type" || val != typ {
					t.Errorf("first member is %q:%v, want \"type\":%q in %s", key, val, typ, b)
				}
				if !bytes.HasPrefix(b, []byte(`{"type":"`+typ+`"`)) {
					t.Errorf("Encode output does not start with the type: %s", b)
				}
				if mb := protocol.MustEncode(f); !bytes.Equal(mb, b) {
					t.Errorf("MustEncode = %s, Encode = %s", mb, b)
				}
				if _, has := objectKeys(t, b)["id"]; has != (requestID(f) != "") {
					t.Errorf("\"id\" present = %v, want %v: %s", has, requestID(f) != "", b)
				}
				got, id, perr := dir.decode(b)
				if perr != nil {
					t.Fatalf("decode %s: %v", b, perr)
				}
				if !reflect.DeepEqual(got, f) {
					t.Errorf("round trip of %s\n got %#v\nwant %#v", b, got, f)
				}
				if id != requestID(f) {
					t.Errorf("decode returned id %q, want %q", id, requestID(f))
				}
			})
		}
		for _, typ := range dir.types {
			if !covered[typ] {
				t.Errorf("%s: no sample of type %q", dir.name, typ)
			}
		}
	}
}

// TestSpecExamples decodes the frames written out in PROTOCOL.md.
func TestSpecExamples(t *testing.T) {
	tests := []struct {
		in     string
		decode decodeFunc
		want   protocol.Frame
		id     string
	}{
		{`{"type":"hello","id":"1","protocol":1,"user":"alice","device":"laptop","token":"…"}`, protocol.DecodeClientFrame,
			&protocol.Hello{Ref: protocol.Ref{ID: "1"}, Protocol: 1, User: "alice", Device: "laptop", Token: "…"}, "1"},
		{`{"type":"welcome","id":"1","user":"alice","device":"laptop","server_time":1763800000000}`, protocol.DecodeServerFrame,
			&protocol.Welcome{Ref: protocol.Ref{ID: "1"}, User: "alice", Device: "laptop", ServerTime: 1763800000000}, "1"},
		{`{"type":"send","id":"7","conv":"d:alice:bob","msg_id":"01J…","body":"hey","client_ts":1763800000000}`, protocol.DecodeClientFrame,
			&protocol.Send{Ref: protocol.Ref{ID: "7"}, Conv: "d:alice:bob", MsgID: "01J…", Body: "hey", ClientTS: 1763800000000}, "7"},
		{`{"type":"sent","id":"7","conv":"d:alice:bob","msg_id":"01J…","seq":42,"server_ts":1763800000012}`, protocol.DecodeServerFrame,
			&protocol.Sent{Ref: protocol.Ref{ID: "7"}, Conv: "d:alice:bob", MsgID: "01J…", Seq: 42, ServerTS: 1763800000012}, "7"},
		{`{"type":"msg","msg":{"conv":"d:alice:bob","seq":42,"msg_id":"01J…","from":"alice","body":"hey","client_ts":1763800000000,"server_ts":1763800000012}}`, protocol.DecodeServerFrame,
			&protocol.MsgPush{Msg: protocol.Message{Conv: "d:alice:bob", Seq: 42, MsgID: "01J…", From: "alice", Body: "hey", ClientTS: 1763800000000, ServerTS: 1763800000012}}, ""},
		{`{"type":"msg","msg":{"conv":"g:x","seq":1,"msg_id":"s1","from":"alice","body":"alice created the group","client_ts":0,"server_ts":5,"kind":"system"}}`, protocol.DecodeServerFrame,
			&protocol.MsgPush{Msg: protocol.Message{Conv: "g:x", Seq: 1, MsgID: "s1", From: "alice", Body: "alice created the group", ServerTS: 5, Kind: protocol.KindSystem}}, ""},
		{`{"type":"history","id":"5","conv":"d:alice:bob","before_seq":480,"limit":20}`, protocol.DecodeClientFrame,
			&protocol.History{Ref: protocol.Ref{ID: "5"}, Conv: "d:alice:bob", BeforeSeq: 480, Limit: 20}, "5"},
		{`{"type":"history","id":"6","conv":"d:alice:bob","after_seq":41,"limit":200}`, protocol.DecodeClientFrame,
			&protocol.History{Ref: protocol.Ref{ID: "6"}, Conv: "d:alice:bob", AfterSeq: i64(41), Limit: 200}, "6"},
		{`{"type":"history","id":"6","conv":"d:alice:bob","after_seq":0}`, protocol.DecodeClientFrame,
			&protocol.History{Ref: protocol.Ref{ID: "6"}, Conv: "d:alice:bob", AfterSeq: i64(0)}, "6"},
		{`{"type":"messages","id":"5","conv":"d:alice:bob","messages":[],"has_more":true}`, protocol.DecodeServerFrame,
			&protocol.Messages{Ref: protocol.Ref{ID: "5"}, Conv: "d:alice:bob", Messages: []protocol.Message{}, HasMore: true}, "5"},
		{`{"type":"delivered","id":"8","marks":[{"conv":"d:alice:bob","seq":44}]}`, protocol.DecodeClientFrame,
			&protocol.Delivered{Ref: protocol.Ref{ID: "8"}, Marks: []protocol.Mark{{Conv: "d:alice:bob", Seq: 44}}}, "8"},
		{`{"type":"read","id":"9","marks":[{"conv":"d:alice:bob","seq":44}]}`, protocol.DecodeClientFrame,
			&protocol.Read{Ref: protocol.Ref{ID: "9"}, Marks: []protocol.Mark{{Conv: "d:alice:bob", Seq: 44}}}, "9"},
		{`{"type":"read","marks":[{"conv":"g:x","seq":3}]}`, protocol.DecodeClientFrame,
			&protocol.Read{Marks: []protocol.Mark{{Conv: "g:x", Seq: 3}}}, ""},
		{`{"type":"ok","id":"8"}`, protocol.DecodeServerFrame, &protocol.OK{Ref: protocol.Ref{ID: "8"}}, "8"},
		{`{"type":"status","conv":"d:alice:bob","delivered_seq":44,"read_seq":42}`, protocol.DecodeServerFrame,
			&protocol.Status{Conv: "d:alice:bob", DeliveredSeq: 44, ReadSeq: 42}, ""},
		{`{"type":"receipts","id":"4","conv":"g:x"}`, protocol.DecodeClientFrame,
			&protocol.ReceiptsRequest{Ref: protocol.Ref{ID: "4"}, Conv: "g:x"}, "4"},
		{`{"type":"receipts","id":"4","conv":"g:x","members":[{"user":"bob","delivered_seq":44,"read_seq":42}]}`, protocol.DecodeServerFrame,
			&protocol.ReceiptsReply{Ref: protocol.Ref{ID: "4"}, Conv: "g:x", Members: []protocol.MemberReceipt{{User: "bob", DeliveredSeq: 44, ReadSeq: 42}}}, "4"},
		{`{"type":"sync","id":"3","since":0,"limit":200}`, protocol.DecodeClientFrame,
			&protocol.Sync{Ref: protocol.Ref{ID: "3"}, Limit: 200}, "3"},
		{`{"type":"sync","id":"3","since":17,"sub_biz":"shop"}`, protocol.DecodeClientFrame,
			&protocol.Sync{Ref: protocol.Ref{ID: "3"}, Since: 17, SubBiz: "shop"}, "3"},
		{`{"type":"sessions","id":"3","sessions":[],"cursor":1763800000123,"has_more":false,"total_unread":5}`, protocol.DecodeServerFrame,
			&protocol.Sessions{Ref: protocol.Ref{ID: "3"}, Sessions: []protocol.Session{}, Cursor: 1763800000123, TotalUnread: 5}, "3"},
		{`{"type":"session_sync","cursor":1763800000456}`, protocol.DecodeServerFrame,
			&protocol.SessionSync{Cursor: 1763800000456}, ""},
		{`{"type":"session_op","id":"11","conv":"d:alice:bob","op":"pin"}`, protocol.DecodeClientFrame,
			&protocol.SessionOp{Ref: protocol.Ref{ID: "11"}, Conv: "d:alice:bob", Op: "pin"}, "11"},
		{`{"type":"session_op","id":"11","conv":"d:alice:bob","op":"mute","until":1763900000000}`, protocol.DecodeClientFrame,
			&protocol.SessionOp{Ref: protocol.Ref{ID: "11"}, Conv: "d:alice:bob", Op: "mute", Until: 1763900000000}, "11"},
		{`{"type":"session_op","id":"11","conv":"d:alice:bob","op":"set_category","category":"promotions"}`, protocol.DecodeClientFrame,
			&protocol.SessionOp{Ref: protocol.Ref{ID: "11"}, Conv: "d:alice:bob", Op: "set_category", Category: "promotions"}, "11"},
		{`{"type":"create_group","id":"12","title":"team","members":["bob","carol"]}`, protocol.DecodeClientFrame,
			&protocol.CreateGroup{Ref: protocol.Ref{ID: "12"}, Title: "team", Members: []string{"bob", "carol"}}, "12"},
		{`{"type":"create_group","id":"12","title":"team","members":["bob"],"key":"k1"}`, protocol.DecodeClientFrame,
			&protocol.CreateGroup{Ref: protocol.Ref{ID: "12"}, Title: "team", Members: []string{"bob"}, Key: "k1"}, "12"},
		{`{"type":"group","id":"12","conv":"g:01J…","title":"team","members":["alice","bob","carol"]}`, protocol.DecodeServerFrame,
			&protocol.Group{Ref: protocol.Ref{ID: "12"}, Conv: "g:01J…", Title: "team", Members: []string{"alice", "bob", "carol"}}, "12"},
		{`{"type":"group_op","id":"13","conv":"g:01J…","op":"add","users":["dave"]}`, protocol.DecodeClientFrame,
			&protocol.GroupOp{Ref: protocol.Ref{ID: "13"}, Conv: "g:01J…", Op: "add", Users: []string{"dave"}}, "13"},
		{`{"type":"group_op","id":"15","conv":"g:01J…","op":"leave"}`, protocol.DecodeClientFrame,
			&protocol.GroupOp{Ref: protocol.Ref{ID: "15"}, Conv: "g:01J…", Op: "leave"}, "15"},
		{`{"type":"group_op","id":"16","conv":"g:01J…","op":"rename","title":"core team"}`, protocol.DecodeClientFrame,
			&protocol.GroupOp{Ref: protocol.Ref{ID: "16"}, Conv: "g:01J…", Op: "rename", Title: "core team"}, "16"},
		{`{"type":"typing","conv":"d:alice:bob"}`, protocol.DecodeClientFrame, &protocol.Typing{Conv: "d:alice:bob"}, ""},
		{`{"type":"typing","conv":"d:alice:bob","user":"alice"}`, protocol.DecodeServerFrame, &protocol.Typing{Conv: "d:alice:bob", User: "alice"}, ""},
		{`{"type":"error","id":"7","code":"forbidden","message":"not a member of g:x"}`, protocol.DecodeServerFrame,
			&protocol.ErrorFrame{Ref: protocol.Ref{ID: "7"}, Code: protocol.CodeForbidden, Message: "not a member of g:x"}, "7"},
	}
	for _, tt := range tests {
		got, id, perr := tt.decode([]byte(tt.in))
		if perr != nil {
			t.Errorf("decode %s: %v", tt.in, perr)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("decode %s\n got %#v\nwant %#v", tt.in, got, tt.want)
		}
		if id != tt.id {
			t.Errorf("decode %s: id %q, want %q", tt.in, id, tt.id)
		}
		// Encoding the expected value gives the same JSON object (key order
		// aside), so the field names match the contract in both directions.
		b, err := protocol.Encode(tt.want)
		if err != nil {
			t.Errorf("Encode(%#v): %v", tt.want, err)
			continue
		}
		var wantObj, gotObj any
		if err := json.Unmarshal([]byte(tt.in), &wantObj); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &gotObj); err != nil {
			t.Fatalf("Encode gave invalid JSON %s: %v", b, err)
		}
		if !reflect.DeepEqual(gotObj, wantObj) {
			t.Errorf("Encode(%T)\n got %s\nwant %s", tt.want, b, tt.in)
		}
	}
}

func TestEncodeExact(t *testing.T) {
	tests := []struct {
		f    protocol.Frame
		want string
	}{
		{&protocol.OK{}, `{"type":"ok"}`},
		{&protocol.OK{Ref: protocol.Ref{ID: "8"}}, `{"type":"ok","id":"8"}`},
		{&protocol.SessionSync{}, `{"type":"session_sync","cursor":0}`},
		{protocol.Errorf(protocol.CodeForbidden, "not a member of %s", "g:x").Frame("7"),
			`{"type":"error","id":"7","code":"forbidden","message":"not a member of g:x"}`},
		{protocol.Errorf(protocol.CodeBadFrame, "x").Frame(""), `{"type":"error","code":"bad_frame","message":"x"}`},
	}
	for _, tt := range tests {
		b, err := protocol.Encode(tt.f)
		if err != nil {
			t.Errorf("Encode(%#v): %v", tt.f, err)
			continue
		}
		if string(b) != tt.want {
			t.Errorf("Encode(%#v) = %s, want %s", tt.f, b, tt.want)
		}
	}
}

// Frames the server pushes unasked carry no id, whatever they hold.
func TestPushedFramesHaveNoID(t *testing.T) {
	for _, f := range []protocol.Frame{
		&protocol.MsgPush{Msg: sampleMessage()},
		&protocol.Status{Conv: "g:x", DeliveredSeq: 1, ReadSeq: 1},
		&protocol.SessionSync{Cursor: 5},
		&protocol.Typing{Conv: "g:x", User: "bob"},
	} {
		if _, ok := f.(requester); ok {
			t.Errorf("%T can carry a request id", f)
		}
		if _, has := objectKeys(t, protocol.MustEncode(f))["id"]; has {
			t.Errorf("%T encodes an id", f)
		}
	}
}

func TestSessionObjectHasEveryField(t *testing.T) {
	fields := []string{
		"conv", "kind", "title", "members", "unread_count", "read_seq", "write_seq",
		"active_ts", "write_ts", "muted", "mute_until", "priority", "deleted",
		"marked_unread", "category", "sub_biz", "last_msg", "ticks",
	}
	b := protocol.MustEncode(&protocol.Sessions{Ref: protocol.Ref{ID: "3"}, Sessions: []protocol.Session{{}}})
	var frame struct {
		Sessions []map[string]json.RawMessage `json:"sessions"`
	}
	if err := json.Unmarshal(b, &frame); err != nil || len(frame.Sessions) != 1 {
		t.Fatalf("%s: %v", b, err)
	}
	s := frame.Sessions[0]
	for _, k := range fields {
		if _, ok := s[k]; !ok {
			t.Errorf("zero session lacks %q: %s", k, b)
		}
	}
	ticks := objectKeys(t, s["ticks"])
	for _, k := range []string{"delivered_seq", "read_seq"} {
		if _, ok := ticks[k]; !ok {
			t.Errorf("ticks lack %q: %s", k, b)
		}
	}
}

func TestMessageObjectFields(t *testing.T) {
	fields := []string{"conv", "seq", "msg_id", "from", "body", "client_ts", "server_ts"}
	for _, kind := range []string{"", protocol.KindSystem} {
		b := protocol.MustEncode(&protocol.MsgPush{Msg: protocol.Message{Kind: kind}})
		var frame struct {
			Msg map[string]json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(b, &frame); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for _, k := range fields {
			if _, ok := frame.Msg[k]; !ok {
				t.Errorf("message lacks %q: %s", k, b)
			}
		}
		raw, has := frame.Msg["kind"]
		switch {
		case kind == "" && has:
			t.Errorf("a plain message carries kind: %s", b)
		case kind != "" && string(raw) != `"system"`:
			t.Errorf("a system message has kind %s: %s", raw, b)
		}
	}
}

type badFrameCase struct {
	name   string
	in     string
	wantID string
}

// Malformed input that neither decoder accepts.
var badFrames = []badFrameCase{
	{"empty", "", ""},
	{"blank", " \t\r\n", ""},
	{"not json", "hello", ""},
	{"truncated object", `{"type":"ok"`, ""},
	{"truncated after id", `{"type":"send","id":"7","conv":"d:alice:bob"`, ""},
	{"trailing garbage", `{"type":"ok","id":"7"} x`, ""},
	{"two objects", `{"type":"ok"}{"type":"ok"}`, ""},
	{"bad escape", `{"type":"ok","id":"\q"}`, ""},
	{"single quotes", `{'type':'ok'}`, ""},
	{"array", `[]`, ""},
	{"array of frame", `[{"type":"ok","id":"7"}]`, ""},
	{"null", `null`, ""},
	{"number", `42`, ""},
	{"string", `"ok"`, ""},
	{"bool", `true`, ""},
	{"byte order mark", "\xef\xbb\xbf{\"type\":\"ok\"}", ""},
	{"missing type", `{}`, ""},
	{"missing type with id", `{"id":"7"}`, "7"},
	{"null type", `{"type":null,"id":"7"}`, "7"},
	{"number type", `{"type":5,"id":"7"}`, "7"},
	{"object type", `{"type":{"name":"ok"},"id":"7"}`, "7"},
	{"array type", `{"id":"7","type":["ok"]}`, "7"},
	{"bool type", `{"type":true,"id":"7"}`, "7"},
	{"empty type", `{"type":"","id":"7"}`, "7"},
	{"unknown type", `{"type":"nope","id":"7"}`, "7"},
	{"unknown type id first", `{"id":"7","type":"nope"}`, "7"},
	{"type differs in case", `{"type":"OK","id":"7"}`, "7"},
	{"type with space", `{"type":" ok","id":"7"}`, "7"},
	{"long unknown type", `{"type":"` + strings.Repeat("x", 300) + `","id":"7"}`, "7"},
	{"unicode unknown type", `{"type":"` + strings.Repeat("é", 30) + `","id":"é"}`, "é"},
	{"id number", `{"type":"nope","id":7}`, ""},
	{"id bool", `{"type":"ok","id":true}`, ""},
	{"id array", `{"type":"ok","id":["7"]}`, ""},
	{"id object", `{"type":"ok","id":{"v":"7"}}`, ""},
	{"id number known type", `{"type":"typing","id":7,"conv":"g:x"}`, ""},
}

// Client frames with a field of the wrong JSON type.
var badClientFrames = []badFrameCase{
	{"hello protocol string", `{"type":"hello","id":"1","protocol":"1","device":"laptop"}`, "1"},
	{"hello protocol float", `{"type":"hello","id":"1","protocol":1.5,"device":"laptop"}`, "1"},
	{"hello device number", `{"type":"hello","id":"1","protocol":1,"device":5}`, "1"},
	{"hello user array", `{"type":"hello","id":"1","protocol":1,"device":"d","user":["alice"]}`, "1"},
	{"send conv number", `{"type":"send","id":"7","conv":1,"msg_id":"m","body":"b"}`, "7"},
	{"send body object", `{"type":"send","id":"7","conv":"g:x","msg_id":"m","body":{}}`, "7"},
	{"send client_ts string", `{"type":"send","id":"7","conv":"g:x","msg_id":"m","body":"b","client_ts":"x"}`, "7"},
	{"send client_ts overflow", `{"type":"send","id":"7","conv":"g:x","msg_id":"m","body":"b","client_ts":9223372036854775808}`, "7"},
	{"history before_seq string", `{"type":"history","id":"5","conv":"g:x","before_seq":"x"}`, "5"},
	{"history after_seq string", `{"type":"history","id":"5","conv":"g:x","after_seq":"x"}`, "5"},
	{"history limit bool", `{"type":"history","id":"5","conv":"g:x","limit":true}`, "5"},
	{"delivered marks object", `{"type":"delivered","id":"8","marks":{}}`, "8"},
	{"delivered marks string", `{"type":"delivered","id":"8","marks":"g:x"}`, "8"},
	{"delivered mark number", `{"type":"delivered","id":"8","marks":[1]}`, "8"},
	{"delivered seq string", `{"type":"delivered","id":"8","marks":[{"conv":"g:x","seq":"x"}]}`, "8"},
	{"read seq float", `{"type":"read","id":"9","marks":[{"conv":"g:x","seq":4.5}]}`, "9"},
	{"read conv number", `{"type":"read","marks":[{"conv":5,"seq":4}]}`, ""},
	{"receipts conv array", `{"type":"receipts","id":"4","conv":["g:x"]}`, "4"},
	{"typing conv number", `{"type":"typing","conv":5}`, ""},
	{"sync since string", `{"type":"sync","id":"3","since":"0"}`, "3"},
	{"sync limit float", `{"type":"sync","id":"3","limit":2.5}`, "3"},
	{"session_op until string", `{"type":"session_op","id":"11","conv":"g:x","op":"mute","until":"1"}`, "11"},
	{"session_op op number", `{"type":"session_op","id":"11","conv":"g:x","op":1}`, "11"},
	{"create_group members string", `{"type":"create_group","id":"12","title":"t","members":"bob"}`, "12"},
	{"create_group member number", `{"type":"create_group","id":"12","title":"t","members":[1]}`, "12"},
	{"group_op users object", `{"type":"group_op","id":"13","conv":"g:x","op":"add","users":{}}`, "13"},
	{"group_op title bool", `{"type":"group_op","id":"16","conv":"g:x","op":"rename","title":false}`, "16"},
}

// Server frames with a field of the wrong JSON type.
var badServerFrames = []badFrameCase{
	{"welcome server_time float", `{"type":"welcome","id":"1","user":"a","device":"d","server_time":1.5}`, "1"},
	{"sent seq string", `{"type":"sent","id":"7","seq":"x"}`, "7"},
	{"msg not object", `{"type":"msg","msg":5}`, ""},
	{"msg seq string", `{"type":"msg","msg":{"conv":"g:x","seq":"1"}}`, ""},
	{"messages object", `{"type":"messages","id":"5","messages":{}}`, "5"},
	{"messages has_more string", `{"type":"messages","id":"5","messages":[],"has_more":"yes"}`, "5"},
	{"ok session array", `{"type":"ok","id":"11","session":[]}`, "11"},
	{"status delivered_seq string", `{"type":"status","conv":"g:x","delivered_seq":"44","read_seq":42}`, ""},
	{"receipts member seq string", `{"type":"receipts","id":"4","conv":"g:x","members":[{"user":"bob","read_seq":"1"}]}`, "4"},
	{"error code number", `{"type":"error","id":"7","code":5,"message":"m"}`, "7"},
	{"typing user number", `{"type":"typing","conv":"g:x","user":1}`, ""},
	{"sessions session muted number", `{"type":"sessions","id":"3","sessions":[{"muted":1}]}`, "3"},
	{"sessions last_msg number", `{"type":"sessions","id":"3","sessions":[{"last_msg":5}]}`, "3"},
	{"sessions ticks string", `{"type":"sessions","id":"3","sessions":[{"ticks":"x"}]}`, "3"},
	{"sessions cursor string", `{"type":"sessions","id":"3","sessions":[],"cursor":"1"}`, "3"},
	{"session_sync cursor string", `{"type":"session_sync","cursor":"1"}`, ""},
	{"group members string", `{"type":"group","id":"12","conv":"g:x","members":"alice"}`, "12"},
}

func checkBadFrame(t *testing.T, decode decodeFunc, tt badFrameCase) {
	t.Helper()
	f, id, perr := decode([]byte(tt.in))
	if perr == nil {
		t.Errorf("%s: decode(%q) = %#v, want bad_frame", tt.name, tt.in, f)
		return
	}
	if f != nil {
		t.Errorf("%s: decode(%q) returned frame %#v with error %v", tt.name, tt.in, f, perr)
	}
	if perr.Code != protocol.CodeBadFrame {
		t.Errorf("%s: decode(%q) code %q, want bad_frame (%v)", tt.name, tt.in, perr.Code, perr)
	}
	if perr.Message == "" || !strings.HasPrefix(perr.Error(), "bad_frame: ") {
		t.Errorf("%s: decode(%q) error %q lacks code or message", tt.name, tt.in, perr.Error())
	}
	if id != tt.wantID {
		t.Errorf("%s: decode(%q) id %q, want %q", tt.name, tt.in, id, tt.wantID)
	}
	// The error answers with the id read, and encodes like any frame.
	ef := perr.Frame(id)
	if ef.ID != id || ef.Code != protocol.CodeBadFrame || ef.Message != perr.Message {
		t.Errorf("%s: error frame %#v does not carry the error", tt.name, ef)
	}
	if b, err := protocol.Encode(ef); err != nil || !json.Valid(b) {
		t.Errorf("%s: error frame encodes to %s, %v", tt.name, b, err)
	}
}

func TestDecodeBadFrame(t *testing.T) {
	for _, tt := range badFrames {
		checkBadFrame(t, protocol.DecodeClientFrame, tt)
		checkBadFrame(t, protocol.DecodeServerFrame, tt)
	}
	for _, tt := range badClientFrames {
		checkBadFrame(t, protocol.DecodeClientFrame, tt)
	}
	for _, tt := range badServerFrames {
		checkBadFrame(t, protocol.DecodeServerFrame, tt)
	}
}

// A client cannot send a server frame, and the server sends no client frame.
func TestDecodeDirection(t *testing.T) {
	for _, typ := range []string{"welcome", "sent", "msg", "messages", "ok", "status", "error", "sessions", "session_sync", "group"} {
		checkBadFrame(t, protocol.DecodeClientFrame, badFrameCase{"server type " + typ, `{"type":"` + typ + `","id":"x1"}`, "x1"})
	}
	for _, typ := range []string{"hello", "send", "history", "delivered", "read", "sync", "session_op", "create_group", "group_op"} {
		checkBadFrame(t, protocol.DecodeServerFrame, badFrameCase{"client type " + typ, `{"type":"` + typ + `","id":"x2"}`, "x2"})
	}
	// receipts and typing go both ways, as different frames.
	if f, _, err := protocol.DecodeClientFrame([]byte(`{"type":"receipts","conv":"g:x"}`)); err != nil {
		t.Errorf("client receipts: %v", err)
	} else if _, ok := f.(*protocol.ReceiptsRequest); !ok {
		t.Errorf("client receipts decoded as %T", f)
	}
	if f, _, err := protocol.DecodeServerFrame([]byte(`{"type":"receipts","conv":"g:x","members":[]}`)); err != nil {
		t.Errorf("server receipts: %v", err)
	} else if _, ok := f.(*protocol.ReceiptsReply); !ok {
		t.Errorf("server receipts decoded as %T", f)
	}
}

func TestDecodeIgnoresUnknownFields(t *testing.T) {
	tests := []struct {
		in     string
		decode decodeFunc
		want   protocol.Frame
	}{
		{`{"type":"send","id":"7","conv":"d:alice:bob","msg_id":"m","body":"hi","client_ts":1,"extra":{"nested":[1,"x",null]},"flag":true,"n":null,"big":1e400}`,
			protocol.DecodeClientFrame,
			&protocol.Send{Ref: protocol.Ref{ID: "7"}, Conv: "d:alice:bob", MsgID: "m", Body: "hi", ClientTS: 1}},
		{`{"future":[{"a":1}],"type":"delivered","marks":[{"conv":"g:x","seq":2,"at":5}]}`,
			protocol.DecodeClientFrame,
			&protocol.Delivered{Marks: []protocol.Mark{{Conv: "g:x", Seq: 2}}}},
		{`{"type":"typing","conv":"g:x","ttl":3.5}`, protocol.DecodeClientFrame, &protocol.Typing{Conv: "g:x"}},
		{`{"type":"status","conv":"g:x","delivered_seq":3,"read_seq":2,"future":"x"}`,
			protocol.DecodeServerFrame,
			&protocol.Status{Conv: "g:x", DeliveredSeq: 3, ReadSeq: 2}},
		{`{"type":"msg","msg":{"conv":"g:x","seq":1,"msg_id":"m","from":"a","body":"b","client_ts":1,"server_ts":2,"edited":true},"x":1}`,
			protocol.DecodeServerFrame,
			&protocol.MsgPush{Msg: protocol.Message{Conv: "g:x", Seq: 1, MsgID: "m", From: "a", Body: "b", ClientTS: 1, ServerTS: 2}}},
	}
	for _, tt := range tests {
		got, _, perr := tt.decode([]byte(tt.in))
		if perr != nil {
			t.Errorf("decode %s: %v", tt.in, perr)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("decode %s\n got %#v\nwant %#v", tt.in, got, tt.want)
		}
	}
}

func TestDecodeWhitespaceAndNullID(t *testing.T) {
	tests := []struct {
		in     string
		want   protocol.Frame
		wantID string
	}{
		{" \t\r\n{\"type\":\"ok\",\"id\":\"8\"} \n", &protocol.OK{Ref: protocol.Ref{ID: "8"}}, "8"},
		{`{ "type" : "ok" , "id" : "8" }`, &protocol.OK{Ref: protocol.Ref{ID: "8"}}, "8"},
		{`{"type":"ok","id":null}`, &protocol.OK{}, ""},
		{`{"type":"ok","id":""}`, &protocol.OK{}, ""},
		{`{"type":"ok","id":"\u00e9\ud83d\ude00"}`, &protocol.OK{Ref: protocol.Ref{ID: "é😀"}}, "é😀"},
		{`{"type":"status","id":"5","conv":"g:x"}`, &protocol.Status{Conv: "g:x"}, "5"},
	}
	for _, tt := range tests {
		got, id, perr := protocol.DecodeServerFrame([]byte(tt.in))
		if perr != nil {
			t.Errorf("decode %q: %v", tt.in, perr)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) || id != tt.wantID {
			t.Errorf("decode %q = %#v, %q; want %#v, %q", tt.in, got, id, tt.want, tt.wantID)
		}
	}
}

func TestErrorValues(t *testing.T) {
	e := protocol.Errorf(protocol.CodeNotFound, "no %s %d", "group", 7)
	if e.Code != protocol.CodeNotFound || e.Message != "no group 7" {
		t.Errorf("Errorf = %#v", e)
	}
	if e.Error() != "not_found: no group 7" {
		t.Errorf("Error() = %q", e.Error())
	}
	var err error = e
	if err.Error() != e.Error() {
		t.Errorf("error interface gives %q", err.Error())
	}
	f := e.Frame("42")
	want := &protocol.ErrorFrame{Ref: protocol.Ref{ID: "42"}, Code: protocol.CodeNotFound, Message: "no group 7"}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("Frame = %#v, want %#v", f, want)
	}
	codes := map[protocol.Code]string{
		protocol.CodeBadFrame: "bad_frame", protocol.CodeUnauthorized: "unauthorized",
		protocol.CodeForbidden: "forbidden", protocol.CodeNotFound: "not_found",
		protocol.CodeInvalid: "invalid", protocol.CodeTooLarge: "too_large",
		protocol.CodeRateLimited: "rate_limited", protocol.CodeInternal: "internal",
	}
	for c, s := range codes {
		if string(c) != s {
			t.Errorf("code %q, want %q", c, s)
		}
	}
}
