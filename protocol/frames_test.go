package protocol

import "testing"

func TestSetRequestID(t *testing.T) {
	send := &Send{Conv: "d:a:b"}
	if !SetRequestID(send, "7") || send.ID != "7" {
		t.Errorf("SetRequestID on a send: id %q", send.ID)
	}
	if SetRequestID(&Typing{Conv: "d:a:b"}, "8") {
		t.Error("SetRequestID claimed to set an id on typing, which carries none")
	}
}
