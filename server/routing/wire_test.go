package routing

import (
	"errors"
	"fmt"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// TestRefusalCrossesANodeLink: a write an owner refuses by the messaging
// rules (a relation entry its target does not allow) reaches the asking
// node as the same refusal, code and reason, for the client to be
// answered with.
func TestRefusalCrossesANodeLink(t *testing.T) {
	refused := fmt.Errorf("append to d:alice:bob: %w", store.Refuse(protocol.CodeForbidden, "only its sender can edit message 4"))
	raw, err := encodeAnswer(nil, refused)
	if err != nil {
		t.Fatal(err)
	}
	var got *store.Refusal
	if err := decodeAnswer(raw, nil); !errors.As(err, &got) || got.Code != protocol.CodeForbidden || got.Reason != "only its sender can edit message 4" {
		t.Fatalf("decoded %v, want the refusal forbidden: only its sender can edit message 4", err)
	}
}
