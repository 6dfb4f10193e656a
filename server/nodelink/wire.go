package nodelink

import (
	"encoding/json"
	"errors"
)

// Request is a frame forwarded to the node that owns what it touches, on
// behalf of a client connected to another node.
type Request struct {
	// Stream names the client connection the frame came on: the owner
	// serves one stream's requests in order.
	Stream string `json:"stream"`
	// User and Device are who the client proved to be on its home node,
	// Node that node's id.
	User   string `json:"user"`
	Device string `json:"device"`
	Node   string `json:"node,omitempty"`
	// Conv is the conversation a create_group frame makes, chosen by the
	// home node (it routes the frame there).
	Conv string `json:"conv,omitempty"`
	// Again says the request repeats one whose answer never came back.
	Again bool `json:"again,omitempty"`
	// Method names what the request asks of the owner when it is not a
	// client's frame (an engine call); "" for a frame.
	Method string `json:"method,omitempty"`
	// Frame is the client's frame as it arrived, or the method's
	// arguments.
	Frame json.RawMessage `json:"frame"`
}

// envelope is a request or an answer on a link.
type envelope struct {
	ID uint64 `json:"id"`
	*Request
	// Answer is the owner's answer frame (null for a frame answered by
	// nothing); Error says why the owner could not serve the request.
	Answer json.RawMessage `json:"answer,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// ErrLinkDown is returned for a request whose link dropped before its
// answer came: the owner may or may not have served it.
var ErrLinkDown = errors.New("nodelink: the link to the owner dropped")

// RemoteError is an owner's refusal to serve a forwarded request (it is
// not the owner, or it is stopping).
type RemoteError struct{ Reason string }

func (e *RemoteError) Error() string { return "nodelink: the owner refused: " + e.Reason }
