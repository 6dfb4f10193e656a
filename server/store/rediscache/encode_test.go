package rediscache

import (
	"reflect"
	"testing"

	"github.com/imcore/im/session"
)

// filled sets every field of the struct v points to (recursively) to a
// value of its own, distinct from the zero value and from the other
// fields', so that a field an encoding forgets shows.
func filled(t *testing.T, v reflect.Value, n *int64) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			filled(t, v.Field(i), n)
		}
	case reflect.String:
		*n++
		v.SetString("s|" + string(rune('a'+*n)) + `"\`)
	case reflect.Int, reflect.Int64, reflect.Int32:
		*n++
		v.SetInt(1<<60 + *n) // above 2^53: no float on the way
	case reflect.Bool:
		v.SetBool(true)
	default:
		t.Fatalf("filled: field of kind %s: extend the test", v.Kind())
	}
}

func TestSessionEncodingRoundTripsEveryField(t *testing.T) {
	var st session.State
	var n int64
	filled(t, reflect.ValueOf(&st).Elem(), &n)
	v, err := encodeSession(st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeSession(v)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, st) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, st)
	}
	if zero, err := decodeSession(mustEncode(t, session.State{})); err != nil || !reflect.DeepEqual(zero, session.State{}) {
		t.Fatalf("zero round trip: %+v, %v", zero, err)
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	for _, v := range []string{"", "-", "1|2|3", "x|2|3|{}", "1|2|3|{"} {
		if _, err := decodeSession(v); err == nil {
			t.Errorf("decodeSession(%q) accepted", v)
		}
	}
}

func mustEncode(t *testing.T, st session.State) string {
	t.Helper()
	v, err := encodeSession(st)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
