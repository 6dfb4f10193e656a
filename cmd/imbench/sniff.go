package main

import (
	"bytes"
	"encoding/json"
)

// pushTypes are the frames the server sends unasked: they carry no id.
var pushTypes = map[string]bool{"msg": true, "status": true, "typing": true, "session_sync": true}

// sniff reads a server frame's type and request id without decoding it.
// The server writes "type" first and the request id right after it
// (protocol.Encode), so frames are recognised by their first bytes;
// anything else — another order, escapes — is read with a small JSON
// decode. The generator decodes in full only the frames it uses, which
// keeps it light next to the server it measures.
func sniff(data []byte) (typ, id string) {
	const typePrefix, idPrefix = `{"type":"`, `,"id":"`
	if rest, ok := bytes.CutPrefix(data, []byte(typePrefix)); ok {
		end := bytes.IndexByte(rest, '"')
		if end > 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
			typ, rest = string(rest[:end]), rest[end+1:]
			if rest, ok := bytes.CutPrefix(rest, []byte(idPrefix)); ok {
				if end := bytes.IndexByte(rest, '"'); end >= 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
					return typ, string(rest[:end])
				}
			} else if pushTypes[typ] {
				return typ, ""
			}
		}
	}
	var env struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	if json.Unmarshal(data, &env) != nil {
		return "", ""
	}
	return env.Type, env.ID
}
