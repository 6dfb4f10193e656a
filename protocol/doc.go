// Package protocol is wire protocol v1 in Go: every frame as a type, one
// codec, validation of identifiers and sizes, conversation ids and the tick
// derivation. It performs no I/O and is shared by the server and every client.
//
// The contract itself is described in docs/PROTOCOL.md at the repository
// root; this package is its executable form.
package protocol

// Version is the protocol version a hello must name.
const Version = 1
