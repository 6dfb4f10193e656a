package protocol

// Limits are the server's configurable size limits that validation checks.
type Limits struct {
	MaxBody      int // bytes in a message body
	MaxGroupSize int // members of a group, its creator included
	MaxTitle     int // characters in a group title
	// MaxPageBytes is the byte budget of one page of an answer (history,
	// sync, receipts); DefaultMaxPageBytes when 0.
	MaxPageBytes int
}

// DefaultLimits are the limits PROTOCOL.md gives as defaults.
var DefaultLimits = Limits{MaxBody: DefaultMaxBody, MaxGroupSize: DefaultMaxGroupSize, MaxTitle: DefaultMaxTitle, MaxPageBytes: DefaultMaxPageBytes}

// Validate checks a hello's shape; authentication is the server's business.
func (h *Hello) Validate() *Error {
	if h.Protocol != Version {
		return Errorf(CodeInvalid, "protocol %d is not supported; this server speaks %d", h.Protocol, Version)
	}
	if !ValidDevice(h.Device) {
		return Errorf(CodeInvalid, "device must be 1-64 characters of [A-Za-z0-9_-]")
	}
	return nil
}

// Validate checks a send's fields against lim.
func (s *Send) Validate(lim Limits) *Error {
	if _, err := ParseMessageConv(s.Conv); err != nil {
		return err
	}
	if !ValidMsgID(s.MsgID) {
		return Errorf(CodeInvalid, "msg_id must be 1-64 printable characters")
	}
	return CheckBody(s.Body, lim.MaxBody)
}

// Validate checks a history request. It does not apply the default limit or
// the clamp; see PageLimit.
func (h *History) Validate() *Error {
	if _, err := ParseMessageConv(h.Conv); err != nil {
		return err
	}
	if h.BeforeSeq > 0 && h.AfterSeq != nil {
		return Errorf(CodeInvalid, "before_seq and after_seq cannot be used together")
	}
	if h.BeforeSeq < 0 || (h.AfterSeq != nil && *h.AfterSeq < 0) {
		return Errorf(CodeInvalid, "seq bounds cannot be negative")
	}
	if h.Limit < 0 {
		return Errorf(CodeInvalid, "limit cannot be negative")
	}
	return nil
}

// PageLimit returns the page size a history request gets: DefaultHistoryLimit
// when absent, at most MaxHistoryLimit.
func (h *History) PageLimit() int {
	switch {
	case h.Limit == 0:
		return DefaultHistoryLimit
	case h.Limit > MaxHistoryLimit:
		return MaxHistoryLimit
	}
	return h.Limit
}

// ValidateMarks checks the marks of a delivered or read frame. A frame may
// carry any number of marks; the frame size limit bounds them.
func ValidateMarks(marks []Mark) *Error {
	if len(marks) == 0 {
		return Errorf(CodeInvalid, "marks is empty")
	}
	for _, m := range marks {
		c, ok := ParseConv(m.Conv)
		if !ok || c.Kind == ConvBiz {
			return invalidConv(m.Conv)
		}
		if m.Seq < 0 {
			return Errorf(CodeInvalid, "seq cannot be negative in mark for %s", m.Conv)
		}
	}
	return nil
}

// ParseMessageConv parses conv and checks that it names a conversation that
// holds messages (a direct chat or a group), answering invalid otherwise.
func ParseMessageConv(conv string) (Conv, *Error) {
	c, ok := ParseConv(conv)
	if !ok || c.Kind == ConvBiz {
		return Conv{}, invalidConv(conv)
	}
	return c, nil
}

func invalidConv(conv string) *Error {
	return Errorf(CodeInvalid, "%q is not a conversation id (d:<a>:<b> with a < b, or g:<id>)", truncate(conv, 80))
}
