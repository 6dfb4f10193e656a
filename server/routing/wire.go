package routing

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/nodelink"
	"github.com/imcore/im/server/store"
)

// The methods a node asks of another over a node link, besides a
// client's frame (method ""): of an owner, of any node.
const (
	mEffects    = "effects"     // apply session effects of the users held here
	mWritten    = "written"     // the rows of a WriteTicket written
	mBarrier    = "barrier"     // every row put so far written
	mCheckMarks = "check_marks" // would these marks be refused
	mResync     = "resync"      // nudge these users' devices to sync
	mRows       = "rows"        // the tickets of a user's pending rows
	mPushes     = "pushes"      // deliver these pushes to the devices here
	mWake       = "wake"        // take the shards just handed over
	mForget     = "forget"      // a user's settings changed: read them again
	mPresence   = "presence"    // a watched user's devices came or went
)

// notOwner is the refusal of a node asked about a shard it does not serve
// (any more, or yet): the asking node finds the owner again and retries.
const notOwner = "not the owner of shard"

// answer is an owner's answer to a method: its result, or the error it
// returned, with the sentinel it wraps named so that the asking node
// returns an error that errors.Is recognises.
type answer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Err    string          `json:"err,omitempty"`
	Kind   string          `json:"kind,omitempty"`
	// Refused is the code of a store.Refusal (Err its reason): a write
	// the rules refused, answered to the client as it is.
	Refused protocol.Code `json:"refused,omitempty"`
}

// sentinels are the store's errors callers tell apart, by name.
var sentinels = map[string]error{
	"not_found":     store.ErrNotFound,
	"msg_id_taken":  store.ErrMsgIDTaken,
	"stale_members": store.ErrStaleMembers,
	"closed":        store.ErrClosed,
}

// encodeAnswer is the answer of a method that returned result or err.
func encodeAnswer(result any, err error) (json.RawMessage, error) {
	if err != nil {
		var refusal *store.Refusal
		if errors.As(err, &refusal) {
			return json.Marshal(answer{Err: refusal.Reason, Refused: refusal.Code})
		}
		a := answer{Err: err.Error()}
		for kind, s := range sentinels {
			if errors.Is(err, s) {
				a.Kind = kind
				break
			}
		}
		return json.Marshal(a)
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	return json.Marshal(answer{Result: raw})
}

// decodeAnswer reads an owner's answer into result, or returns its error.
func decodeAnswer(raw json.RawMessage, result any) error {
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return fmt.Errorf("an owner's answer: %w", err)
	}
	if a.Err != "" {
		if a.Refused != "" {
			return &store.Refusal{Code: a.Refused, Reason: a.Err}
		}
		if s := sentinels[a.Kind]; s != nil {
			return fmt.Errorf("%s: %w", a.Err, s)
		}
		return errors.New(a.Err)
	}
	if result == nil {
		return nil
	}
	return json.Unmarshal(a.Result, result)
}

// The arguments of the methods.
type effectsArgs struct {
	Effects []engine.Effect
}

// request is a node link request for method with args.
func request(stream, method string, args any) (nodelink.Request, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nodelink.Request{}, err
	}
	return nodelink.Request{Stream: stream, Method: method, Frame: raw}, nil
}
