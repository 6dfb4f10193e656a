package chat

import (
	"context"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// History answers a page of a conversation's messages, ascending by seq.
func (s *Service) History(ctx context.Context, c Caller, f *protocol.History) (*protocol.Messages, *protocol.Error) {
	if perr := f.Validate(); perr != nil {
		return nil, perr
	}
	conv, _ := protocol.ParseConv(f.Conv)
	// A group member reads from the message that announced its joining.
	joined, perr := s.checkMember(ctx, conv, c.User)
	if perr != nil {
		return nil, perr
	}
	q := store.HistoryQuery{BeforeSeq: f.BeforeSeq, MinSeq: joined, Limit: f.PageLimit(), MaxBytes: s.limits.MaxPageBytes}
	if f.AfterSeq != nil {
		q.After, q.AfterSeq = true, *f.AfterSeq
	}
	msgs, hasMore, err := s.store.History(ctx, f.Conv, q)
	if err != nil {
		return nil, s.internal("history", err, "conv", f.Conv)
	}
	if msgs == nil {
		msgs = []protocol.Message{}
	}
	return &protocol.Messages{Ref: f.Ref, Conv: f.Conv, Messages: msgs, HasMore: hasMore}, nil
}
