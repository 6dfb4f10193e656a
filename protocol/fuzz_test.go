package protocol_test

import (
	jsonv2 "github.com/go-json-experiment/json"

	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/imcore/im/protocol"
)

// Malformed seeds shared by both fuzz targets, on top of the bad_frame tables.
var fuzzMalformed = []string{
	`{"type":"send","id":"7","conv":"d:alice:bob","msg_id":"m","body":"\ud800"}`,
	"{\"type\":\"send\",\"id\":\"\xff\xfe\",\"body\":\"\xc3\"}",
	`{"type":"history","id":"5","conv":"g:x","after_seq":null,"before_seq":null}`,
	`{"type":"ok","session":null,"id":"1"}`,
	`{"type":"group_op","id":"13","conv":"g:x","op":"add","users":[]}`,
	`{"type":"sessions","sessions":[{"last_msg":null,"members":null}],"cursor":-1}`,
	`{"type":"msg","msg":{"kind":"system"}}`,
	`{"type":"sync","since":-9223372036854775808,"limit":9223372036854775807}`,
	`{"type":"typing","type":"ok"}`,
	`{"id":"1","id":2,"type":"ok"}`,
	`{"type":"ok","id":"` + "\u2028" + `"}`,
	`{"type":"read","marks":[{"conv":"g:x","seq":1e3}]}`,
	`{"type":"read","marks":[[[[[[[[[[]]]]]]]]]]}`,
	`{"type":"hello","protocol":1,"device":"d"`,
	`{"type":"hello"} `,
	`{"type" "hello"}`,
	`{"type":"hello",}`,
	`{}`,
	``,
}

func addSeeds(f *testing.F, valid []protocol.Frame, bad ...[]badFrameCase) {
	for _, fr := range valid {
		f.Add(protocol.MustEncode(fr))
	}
	for _, tbl := range bad {
		for _, tt := range tbl {
			f.Add([]byte(tt.in))
		}
	}
	for _, s := range fuzzMalformed {
		f.Add([]byte(s))
	}
}

func FuzzDecodeClientFrame(f *testing.F) {
	addSeeds(f, clientSamples(), badFrames, badClientFrames)
	// server frames are malformed input for a server
	for _, fr := range serverSamples() {
		f.Add(protocol.MustEncode(fr))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := checkDecode(t, data, protocol.DecodeClientFrame)
		// Validation of whatever decoded must not panic and answers with a
		// code of the protocol.
		switch v := fr.(type) {
		case *protocol.Hello:
			checkCode(t, v.Validate())
		case *protocol.Send:
			checkCode(t, v.Validate(protocol.DefaultLimits))
			checkCode(t, v.ValidateRelation(protocol.DefaultLimits))
		case *protocol.History:
			if checkCode(t, v.Validate()) == nil {
				if n := v.PageLimit(); n < 1 || n > protocol.MaxHistoryLimit {
					t.Errorf("valid history %+v gets page limit %d", v, n)
				}
			}
		case *protocol.Delivered:
			checkCode(t, protocol.ValidateMarks(v.Marks))
		case *protocol.Read:
			checkCode(t, protocol.ValidateMarks(v.Marks))
		case *protocol.ReceiptsRequest:
			checkConv(t, v.Conv)
		case *protocol.Typing:
			checkConv(t, v.Conv)
		case *protocol.SessionOp:
			checkConv(t, v.Conv)
		case *protocol.GroupOp:
			checkConv(t, v.Conv)
		}
	})
}

func FuzzDecodeServerFrame(f *testing.F) {
	addSeeds(f, serverSamples(), badFrames, badServerFrames)
	for _, fr := range clientSamples() {
		f.Add(protocol.MustEncode(fr))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data, protocol.DecodeServerFrame)
	})
}

func checkCode(t *testing.T, err *protocol.Error) *protocol.Error {
	t.Helper()
	if err != nil && err.Code != protocol.CodeInvalid && err.Code != protocol.CodeTooLarge {
		t.Errorf("validation answered %q: %v", err.Code, err)
	}
	return err
}

// checkConv checks that a conversation id that parses prints back as itself.
func checkConv(t *testing.T, s string) {
	t.Helper()
	if c, ok := protocol.ParseConv(s); ok && c.String() != s {
		t.Errorf("ParseConv(%q).String() = %q", s, c.String())
	}
}

// inputFacts reads what a strict, case-sensitive reader sees in data: whether
// it is a JSON object, its "type" when that is a string, and its "id".
type inputFacts struct {
	object    bool
	typ       string
	typString bool
	id        string // "" unless idString
	idString  bool
	idBadType bool // present, not null, not a string
}

// A strict reader refuses duplicate names and invalid UTF-8, so such input
// counts as no object at all.
func readFacts(data []byte) inputFacts {
	var obj map[string]json.RawMessage
	if err := jsonv2.Unmarshal(data, &obj); err != nil || obj == nil {
		return inputFacts{}
	}
	in := inputFacts{object: true}
	if raw, ok := obj["type"]; ok {
		in.typString = json.Unmarshal(raw, &in.typ) == nil && string(raw) != "null"
	}
	if raw, ok := obj["id"]; ok && string(raw) != "null" {
		in.idString = json.Unmarshal(raw, &in.id) == nil
		in.idBadType = !in.idString
	}
	return in
}

// checkDecode asserts the decoder's contract on arbitrary input and returns
// the decoded frame, nil when the input was refused.
func checkDecode(t *testing.T, data []byte, decode decodeFunc) protocol.Frame {
	t.Helper()
	fr, id, perr := decode(data)
	in := readFacts(data)
	if !utf8.ValidString(id) {
		t.Errorf("id %q is not valid UTF-8", id)
	}
	switch {
	case in.idString && id != in.id:
		t.Errorf("returned id %q, but the input's id is %q", id, in.id)
	case !in.idString && id != "":
		t.Errorf("returned id %q, but the input has no readable string id", id)
	}

	if perr != nil {
		if fr != nil {
			t.Errorf("a frame %#v was returned with error %v", fr, perr)
		}
		if perr.Code != protocol.CodeBadFrame {
			t.Errorf("error code %q, want bad_frame: %v", perr.Code, perr)
		}
		if perr.Message == "" {
			t.Error("bad_frame error without a message")
		}
		if b, err := protocol.Encode(perr.Frame(id)); err != nil || !json.Valid(b) {
			t.Errorf("the error frame encodes to %q, %v", b, err)
		}
		return nil
	}

	if fr == nil {
		t.Fatal("no frame and no error")
	}
	if !in.object {
		t.Fatalf("accepted input that is not a JSON object: %q", data)
	}
	if in.idBadType {
		t.Errorf("accepted an id that is not a string: %q", data)
	}
	if !in.typString || fr.FrameType() != in.typ {
		t.Errorf("decoded a %q frame (%T) but the input's \"type\" is %q (a string: %v)", fr.FrameType(), fr, in.typ, in.typString)
	}
	if rid := requestID(fr); rid != id {
		t.Errorf("frame carries id %q, decode returned %q", rid, id)
	}

	b, err := protocol.Encode(fr)
	if err != nil {
		t.Fatalf("Encode(%#v): %v", fr, err)
	}
	if !json.Valid(b) || !bytes.HasPrefix(b, []byte(`{"type":"`+fr.FrameType()+`"`)) {
		t.Fatalf("Encode(%#v) = %q: invalid or type not first", fr, b)
	}
	fr2, id2, perr := decode(b)
	if perr != nil {
		t.Fatalf("re-decoding %q: %v", b, perr)
	}
	if id2 != requestID(fr) {
		t.Errorf("re-decoded id %q, want %q", id2, requestID(fr))
	}
	// From the first encoding on, the text is a fixed point.
	if b2, err := protocol.Encode(fr2); err != nil || !bytes.Equal(b2, b) {
		t.Errorf("re-encoding gave %q, %v; want %q", b2, err, b)
	}
	// An empty list under an omitempty field ("users":[]) is written as an
	// absent field and comes back nil; the two mean the same on the wire.
	nilEmptySlices(reflect.ValueOf(fr))
	nilEmptySlices(reflect.ValueOf(fr2))
	if !reflect.DeepEqual(fr, fr2) {
		t.Errorf("round trip changed the frame:\n input %q\n first %#v\nsecond %#v\n  via %q", data, fr, fr2, b)
	}
	return fr
}

// nilEmptySlices replaces every empty, non-nil slice reachable from v by nil.
func nilEmptySlices(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			nilEmptySlices(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() || f.Kind() != reflect.Slice {
				nilEmptySlices(f)
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		if v.Len() == 0 {
			if v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		for i := range v.Len() {
			nilEmptySlices(v.Index(i))
		}
	}
}
