package protocol

// Tick is the state a sender sees for one of its own messages.
type Tick int

// The tick states, in the order a message moves through them.
const (
	TickPending   Tick = iota // not yet answered by sent: a clock
	TickSent                  // stored by the server: one grey tick
	TickDelivered             // held by every other member: two grey ticks
	TickRead                  // seen by every other member: two blue ticks
)

// String names the tick state.
func (t Tick) String() string {
	switch t {
	case TickSent:
		return "sent"
	case TickDelivered:
		return "delivered"
	case TickRead:
		return "read"
	}
	return "pending"
}

// Ticks are a conversation's tick boundaries: the minimum over all members of
// their delivered and read boundaries.
type Ticks struct {
	DeliveredSeq int64 `json:"delivered_seq"`
	ReadSeq      int64 `json:"read_seq"`
}

// TickOf derives the tick of the caller's own message seq from the
// conversation's boundaries. seq 0 means the server has not answered sent.
func TickOf(seq int64, t Ticks) Tick {
	switch {
	case seq <= 0:
		return TickPending
	case seq <= t.ReadSeq:
		return TickRead
	case seq <= t.DeliveredSeq:
		return TickDelivered
	}
	return TickSent
}

// Merge returns the boundaries that are the higher of t and u on each side,
// with read never above delivered: ticks only move forward.
func (t Ticks) Merge(u Ticks) Ticks {
	out := t
	if u.DeliveredSeq > out.DeliveredSeq {
		out.DeliveredSeq = u.DeliveredSeq
	}
	if u.ReadSeq > out.ReadSeq {
		out.ReadSeq = u.ReadSeq
	}
	if out.ReadSeq > out.DeliveredSeq {
		out.DeliveredSeq = out.ReadSeq
	}
	return out
}
