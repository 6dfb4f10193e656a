package rediscache

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// absent is the cached value of a session the table was read without.
const absent = "-"

// encodeSession is a session's cached value: a header the scripts merge on
// (active_ts, then the ticks) and the whole state as JSON. The header's
// ticks are the ones that count: a script raises them in place.
func encodeSession(st session.State) (string, error) {
	body, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encode session %s/%s: %w", st.User, st.Conv, err)
	}
	return strconv.FormatInt(st.ActiveTS, 10) + "|" +
		strconv.FormatInt(st.Ticks.DeliveredSeq, 10) + "|" +
		strconv.FormatInt(st.Ticks.ReadSeq, 10) + "|" + string(body), nil
}

// decodeSession reads a value encodeSession wrote (and a script may have
// merged ticks into).
func decodeSession(v string) (session.State, error) {
	var st session.State
	parts := strings.SplitN(v, "|", 4)
	if len(parts) != 4 {
		return st, fmt.Errorf("decode session: %d header fields in %.40q", len(parts), v)
	}
	var head [3]int64
	for i := range head {
		n, err := strconv.ParseInt(parts[i], 10, 64)
		if err != nil {
			return st, fmt.Errorf("decode session header: %w", err)
		}
		head[i] = n
	}
	if err := json.Unmarshal([]byte(parts[3]), &st); err != nil {
		return st, fmt.Errorf("decode session: %w", err)
	}
	st.ActiveTS = head[0]
	st.Ticks = protocol.Ticks{DeliveredSeq: head[1], ReadSeq: head[2]}
	return st, nil
}

// decodeTotal reads a cached total ("<at>|<total>").
func decodeTotal(v string) (int64, error) {
	_, total, ok := strings.Cut(v, "|")
	if !ok {
		return 0, fmt.Errorf("decode total: no separator in %q", v)
	}
	n, err := strconv.ParseInt(total, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("decode total: %w", err)
	}
	return n, nil
}
