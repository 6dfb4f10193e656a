package protocol_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/imcore/im/protocol"
)

// marshalFrame is a frame's text as encoding/json writes it, "type"
// first: what Encode writes for every frame it does not write by hand.
func marshalFrame(t *testing.T, f protocol.Frame) []byte {
	t.Helper()
	body, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	out := []byte(`{"type":"` + f.FrameType() + `"`)
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...)
}

// randomMessage is a message whose every field may be set, to text that
// JSON escapes in every way, its reactions absent, null, empty or not.
func randomMessage(rng *rand.Rand, i int) protocol.Message {
	ints := []int64{0, 1, -1, 42, 1763800000000, -9223372036854775808, 9223372036854775807}
	pick := func() int64 { return ints[rng.IntN(len(ints))] }
	m := protocol.Message{Conv: randomText(rng), Seq: pick(), MsgID: randomText(rng), From: randomText(rng),
		Body: randomText(rng), ClientTS: pick(), ServerTS: pick(), ReplyTo: pick(), RefSeq: pick(),
		EditedTS: pick(), Deleted: i%2 == 0}
	if i%3 == 0 {
		m.Kind = randomText(rng)
	}
	var rs []protocol.Reaction
	for range rng.IntN(4) {
		r := protocol.Reaction{Body: randomText(rng)}
		switch rng.IntN(3) {
		case 1:
			r.Users = []string{}
		case 2:
			for range 1 + rng.IntN(3) {
				r.Users = append(r.Users, randomText(rng))
			}
		}
		rs = append(rs, r)
	}
	m.SetReactions(rs)
	switch i % 7 {
	case 0:
		m.Reactions = &[]protocol.Reaction{}
	case 1:
		m.Reactions = new([]protocol.Reaction)
	}
	return m
}

// TestAppendJSONMatchesMarshal: the frames Encode writes by hand are the
// bytes encoding/json writes.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		var frames []protocol.Frame
		push := &protocol.MsgPush{Msg: randomMessage(rng, i)}
		frames = append(frames, push)
		page := &protocol.Messages{Conv: randomText(rng), HasMore: i%2 == 0}
		if i%4 != 0 {
			page.ID = randomText(rng)
		}
		switch i % 5 {
		case 0: // no messages: null
		case 1:
			page.Messages = []protocol.Message{}
		default:
			for j := range rng.IntN(4) {
				page.Messages = append(page.Messages, randomMessage(rng, i+j))
			}
		}
		frames = append(frames, page)
		for _, f := range frames {
			got, err := protocol.Encode(f)
			if err != nil {
				t.Fatal(err)
			}
			if want := marshalFrame(t, f); !bytes.Equal(got, want) {
				t.Fatalf("Encode wrote\n%s\nencoding/json\n%s", got, want)
			}
		}
	}
}

// TestAppendJSONEveryField: with every field of a message and of a page
// set, Encode still writes what encoding/json does, so that a field added
// to Message or Messages and not to their appendJSON fails here.
func TestAppendJSONEveryField(t *testing.T) {
	var fill func(v reflect.Value, path string)
	fill = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.String:
			v.SetString(path)
		case reflect.Int64, reflect.Int:
			v.SetInt(int64(len(path)))
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
			for i := range v.Len() {
				fill(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
		case reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem(), path)
		default:
			t.Fatalf("%s: a field of kind %s, which this test does not fill (and appendJSON may not write)", path, v.Kind())
		}
	}
	var page protocol.Messages
	fill(reflect.ValueOf(&page).Elem(), "page")
	push := &protocol.MsgPush{Msg: page.Messages[0]}
	for _, f := range []protocol.Frame{&page, push} {
		got, err := protocol.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		if want := marshalFrame(t, f); !bytes.Equal(got, want) {
			t.Fatalf("Encode wrote\n%s\nencoding/json\n%s", got, want)
		}
	}
}
