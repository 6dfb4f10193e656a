package relay

import (
	"encoding/binary"
	"errors"

	"github.com/imcore/im/server/hub"
)

// wireVersion starts every message between nodes; a node drops a message
// of a version it does not know.
const wireVersion = 1

// encode writes a push to user as a message between nodes:
//
//	version byte, uvarint len + user, uvarint len + conv, varint seq, frame
//
// The frame, already encoded, takes the rest.
func encode(user string, p hub.Push) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(user)+len(p.Conv)+binary.MaxVarintLen64+len(p.Frame))
	b = append(b, wireVersion)
	b = binary.AppendUvarint(b, uint64(len(user)))
	b = append(b, user...)
	b = binary.AppendUvarint(b, uint64(len(p.Conv)))
	b = append(b, p.Conv...)
	b = binary.AppendVarint(b, p.Seq)
	return append(b, p.Frame...)
}

var errMalformed = errors.New("relay: malformed message between nodes")

// decode reads what encode wrote.
func decode(b []byte) (user string, p hub.Push, err error) {
	if len(b) == 0 || b[0] != wireVersion {
		return "", hub.Push{}, errMalformed
	}
	b = b[1:]
	user, b, ok := readString(b)
	if !ok {
		return "", hub.Push{}, errMalformed
	}
	p.Conv, b, ok = readString(b)
	if !ok {
		return "", hub.Push{}, errMalformed
	}
	seq, n := binary.Varint(b)
	if n <= 0 {
		return "", hub.Push{}, errMalformed
	}
	p.Seq = seq
	p.Frame = b[n:]
	return user, p, nil
}

// readString reads a uvarint length and that many bytes.
func readString(b []byte) (s string, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, false
	}
	end := k + int(n)
	return string(b[k:end]), b[end:], true
}
