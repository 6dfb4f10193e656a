package main

import (
	"testing"

	"github.com/imcore/im/protocol"
)

func TestSniffServerFrames(t *testing.T) {
	frames := []struct {
		f       protocol.Frame
		typ, id string
	}{
		{&protocol.Sent{Ref: protocol.Ref{ID: "s12"}, Conv: "d:a:b", MsgID: "12", Seq: 3}, "sent", "s12"},
		{&protocol.OK{Ref: protocol.Ref{ID: "r7"}}, "ok", "r7"},
		{&protocol.ErrorFrame{Ref: protocol.Ref{ID: "x"}, Code: protocol.CodeInternal, Message: "no"}, "error", "x"},
		{&protocol.ErrorFrame{Code: protocol.CodeBadFrame, Message: "no id"}, "error", ""},
		{&protocol.MsgPush{Msg: protocol.Message{Conv: "d:a:b", Seq: 1, MsgID: "id", From: "a", Body: `"id":"fake"`}}, "msg", ""},
		{&protocol.Status{Conv: "d:a:b", DeliveredSeq: 2, ReadSeq: 1}, "status", ""},
		{&protocol.SessionSync{Cursor: 5}, "session_sync", ""},
		{&protocol.Welcome{Ref: protocol.Ref{ID: "h"}, User: "a", Device: "d"}, "welcome", "h"},
		{&protocol.Sessions{Ref: protocol.Ref{ID: `q"uote`}}, "sessions", `q"uote`},
	}
	for _, c := range frames {
		data := protocol.MustEncode(c.f)
		typ, id := sniff(data)
		if typ != c.typ || id != c.id {
			t.Errorf("%s: sniffed (%q, %q), want (%q, %q)", data, typ, id, c.typ, c.id)
		}
	}
}

func TestSniffOtherOrders(t *testing.T) {
	cases := []struct{ data, typ, id string }{
		{`{"id":"9","type":"ok"}`, "ok", "9"},
		{`{"type":"sent","conv":"d:a:b","id":"s1"}`, "sent", "s1"},
		{` {"type":"ok","id":"1"}`, "ok", "1"},
		{`{"type":"o\u006b","id":"2"}`, "ok", "2"},
		{`not json`, "", ""},
		{`{"type":"ok","id":"unterminated`, "", ""},
	}
	for _, c := range cases {
		typ, id := sniff([]byte(c.data))
		if typ != c.typ || id != c.id {
			t.Errorf("%s: sniffed (%q, %q), want (%q, %q)", c.data, typ, id, c.typ, c.id)
		}
	}
}
