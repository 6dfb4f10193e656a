// Package nodelink carries frames between the nodes of a scaled-out
// deployment: a node that holds a client's socket forwards a frame to the
// node that owns what the frame touches and relays the answer back.
//
// Between two nodes there is one WebSocket (gorilla/websocket, the
// client protocol's library), opened by the forwarding side on first use
// and again after it drops. Requests are multiplexed on it by id; the
// owner serves the requests of one stream (a client connection) in the
// order they came, and those of different streams concurrently. A link
// that drops fails the requests in flight on it (ErrLinkDown): the caller
// decides whether the frame may be sent again (every frame of the
// protocol is idempotent, by msg_id or as a merge).
//
// The endpoint is guarded by a secret every node shares.
package nodelink
