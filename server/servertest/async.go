package servertest

import (
	"runtime"
	"testing"
)

// Async lets a client be driven from a goroutine other than the test's:
// a fatal failure marks the test failed and ends only that goroutine
// (testing.T's FailNow must be called from the test's goroutine). Use it as
// the t of Dial for a client that such a goroutine owns:
//
//	c := env.Dial(servertest.Async{TB: t}, "bob", "racer")
type Async struct{ testing.TB }

// Fatal is Error, then the end of the calling goroutine.
func (a Async) Fatal(args ...any) {
	a.TB.Helper()
	a.TB.Error(args...)
	runtime.Goexit()
}

// Fatalf is Errorf, then the end of the calling goroutine.
func (a Async) Fatalf(format string, args ...any) {
	a.TB.Helper()
	a.TB.Errorf(format, args...)
	runtime.Goexit()
}

// FailNow is Fail, then the end of the calling goroutine.
func (a Async) FailNow() {
	a.TB.Fail()
	runtime.Goexit()
}
