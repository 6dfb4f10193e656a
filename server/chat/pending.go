package chat

import (
	"context"
	"fmt"
	"time"

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

// msgPush is the push of a stored message.
func msgPush(m protocol.Message) hub.Push {
	return hub.Push{Frame: protocol.MustEncode(&protocol.MsgPush{Msg: m}), Conv: m.Conv, Seq: m.Seq}
}

// SeqRange is a contiguous run of seqs, From to To inclusive.
type SeqRange struct{ From, To int64 }

// Replayed records, per conversation, the seqs a replay (or the flush of
// pushes held back during it) sent to one device, as runs in ascending
// order. It is used by one goroutine at a time.
type Replayed map[string][]SeqRange

// Has reports whether seq of conv was sent.
func (r Replayed) Has(conv string, seq int64) bool {
	for _, run := range r[conv] {
		if seq >= run.From && seq <= run.To {
			return true
		}
	}
	return false
}

// Add records that seq of conv was sent.
func (r Replayed) Add(conv string, seq int64) {
	runs := r[conv]
	for i, run := range runs {
		switch {
		case seq >= run.From && seq <= run.To:
			return
		case seq == run.To+1:
			runs[i].To = seq
			if i+1 < len(runs) && runs[i+1].From == seq+1 {
				runs[i].To = runs[i+1].To
				runs = append(runs[:i+1], runs[i+2:]...)
			}
			r[conv] = runs
			return
		case seq == run.From-1:
			runs[i].From = seq
			r[conv] = runs
			return
		case seq < run.From:
			runs = append(runs[:i], append([]SeqRange{{seq, seq}}, runs[i:]...)...)
			r[conv] = runs
			return
		}
	}
	r[conv] = append(runs, SeqRange{seq, seq})
}

// skipSent returns after moved past every seq sent in a row after it.
func (r Replayed) skipSent(conv string, after int64) int64 {
	for _, run := range r[conv] {
		if after+1 >= run.From && after+1 <= run.To {
			after = run.To
		}
	}
	return after
}

// Replay pushes every message user has not had delivered, oldest first per
// conversation, from its pending rows (the source design's
// pending-deliveries table: the first undelivered seq per user and
// conversation), up to each conversation's newest message when the rows
// were read. Anything newer was stored after
// the device registered, so it reaches the device as a live push (held
// back until the replay ends); stopping there also keeps a user removed
// from a group during its replay from being sent what came after its
// removal. It records what it pushes in
// done and skips what done already holds, so that a second pass, or a live
// push of the same message, sends nothing twice.
//
// A seq missing below the newest (a cluster owner writes a conversation's
// appends side by side, so a later one can be stored first) is waited for,
// within gapWait, before anything after it is pushed.
//
// The rows stay until the user's delivered marks reach each conversation's
// newest seq, so a replay cut short — or a push lost with its socket — is
// done again on the next hello.
func (s *Service) Replay(ctx context.Context, user string, to ReplayTarget, done Replayed) error {
	rows, err := s.store.Pending(ctx, user)
	if err != nil {
		return fmt.Errorf("replay for %s: %w", user, err)
	}
	gaps := &gapWaiter{deadline: time.Now().Add(s.gapWait)}
	for _, row := range rows {
		if err := s.replayConversation(ctx, user, row, to, done, gaps); err != nil {
			return fmt.Errorf("replay %s for %s: %w", row.Conv, user, err)
		}
	}
	return nil
}

func (s *Service) replayConversation(ctx context.Context, user string, row store.PendingDelivery, to ReplayTarget, done Replayed, gaps *gapWaiter) error {
	after := done.skipSent(row.Conv, row.ReplayFrom()-1)
	for {
		msgs, hasMore, err := s.store.History(ctx, row.Conv, store.HistoryQuery{After: true, AfterSeq: after, Limit: replayPage, MaxBytes: s.limits.MaxPageBytes})
		if err != nil {
			return err
		}
		missing := false
		for _, m := range msgs {
			if m.Seq > row.NewestSeq {
				return nil
			}
			if m.Seq > after+1 && !gaps.over() {
				missing = true
				break
			}
			after = m.Seq
			// A user's own message is never pending for them: storing it
			// raises its sender's boundaries past it. A replay that reads
			// the conversation between the message's append and its
			// derivation would otherwise push it back to the device that
			// sent it.
			if m.From == user || done.Has(m.Conv, m.Seq) {
				continue
			}
			if err := to.DeliverWait(ctx, msgPush(m)); err != nil {
				return err
			}
			done.Add(m.Conv, m.Seq)
		}
		switch {
		case after >= row.NewestSeq:
			return nil
		case !missing && hasMore && len(msgs) > 0:
			continue
		case !missing && gaps.over():
			return nil // the rest below the newest seq never came
		}
		// Seqs below the newest are not in the log (yet): wait for them
		// before sending anything after them, so that the device gets the
		// conversation oldest first.
		if err := gaps.wait(ctx, row.Conv, after); err != nil {
			return err
		}
	}
}

// gapWait bounds how long one replay pass waits for seqs missing below the
// newest seqs it read. A conversation's owner writes its appends side by
// side, so a message can be in the log before one given a lower seq, whose
// write ends a moment later (milliseconds; seconds under a saturated
// store). A seq still missing once the pass has waited gapWait in all is
// one its append left unused (the owner gives it to its next message), and
// the pass goes on past it and every later gap.
const gapWait = 2 * time.Second

// gapWaiter paces one replay pass's waits for missing seqs.
type gapWaiter struct {
	deadline time.Time
	conv     string
	at       int64 // the seq after which the gap waited for is
	pause    time.Duration
}

// over reports whether the pass has used its time for gaps.
func (g *gapWaiter) over() bool { return !time.Now().Before(g.deadline) }

// wait pauses before conv's log is read again for the gap after seq after,
// a little longer each time it waits at the same gap.
func (g *gapWaiter) wait(ctx context.Context, conv string, after int64) error {
	if g.conv != conv || g.at != after {
		g.conv, g.at, g.pause = conv, after, 2*time.Millisecond
	}
	t := time.NewTimer(min(g.pause, time.Until(g.deadline)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	g.pause = min(2*g.pause, 100*time.Millisecond)
	return nil
}
