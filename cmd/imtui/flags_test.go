package main

import (
	"io"
	"testing"
)

// TestNotifyFlag checks that notifications are on by default and that
// -notify=false turns them off.
func TestNotifyFlag(t *testing.T) {
	o, err := parseOptions([]string{"-user", "alice"}, io.Discard)
	if err != nil || !o.notify {
		t.Fatalf("default: notify %v, %v", o.notify, err)
	}
	o, err = parseOptions([]string{"-user", "alice", "-notify=false"}, io.Discard)
	if err != nil || o.notify {
		t.Fatalf("-notify=false: notify %v, %v", o.notify, err)
	}
}
