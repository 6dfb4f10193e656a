package chat

import (
	"context"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/store"
)

// ReplayTarget is a device that takes pushes with flow control: DeliverWait
// blocks until the device has room, so that a backlog of any size can be
// replayed through a bounded queue.
type ReplayTarget interface {
	DeliverWait(ctx context.Context, p hub.Push) error
}

// replayPage is how many messages one read of a pending conversation takes.
const replayPage = protocol.MaxHistoryLimit

// Replay pushes every message user has not had delivered, oldest first per
// conversation, from its pending rows (seed 001). The rows stay until the
// user's delivered marks reach each conversation's newest seq, so a replay
// cut short — or a push lost with its socket — is done again on the next
// hello.
func (s *Service) Replay(ctx context.Context, user string, to ReplayTarget) error {
	rows, err := s.store.Pending(ctx, user)
	if err != nil {
		return fmt.Errorf("replay for %s: %w", user, err)
	}
	for _, row := range rows {
		if err := s.replayConversation(ctx, row, to); err != nil {
			return fmt.Errorf("replay %s for %s: %w", row.Conv, user, err)
		}
	}
	return nil
}

func (s *Service) replayConversation(ctx context.Context, row store.PendingDelivery, to ReplayTarget) error {
	after := row.ReplayFrom() - 1
	for after < row.NewestSeq {
		msgs, hasMore, err := s.store.History(ctx, row.Conv, store.HistoryQuery{After: true, AfterSeq: after, Limit: replayPage})
		if err != nil {
			return err
		}
		for _, m := range msgs {
			p := hub.Push{Frame: protocol.MustEncode(&protocol.MsgPush{Msg: m})}
			if err := to.DeliverWait(ctx, p); err != nil {
				return err
			}
			after = m.Seq
		}
		if !hasMore || len(msgs) == 0 {
			return nil
		}
	}
	return nil
}
