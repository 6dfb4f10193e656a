package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// related reports whether m points at another message of its
// conversation: a reply (reply_to) or a relation entry (ref), whose target
// the engine checks before storing it.
func related(m protocol.Message) bool { return m.ReplyTo != 0 || m.IsRelation() }

// pointsAt is the seq m points at (its target's or the message it
// replies to), 0 for none: m's own seq must be above it.
func pointsAt(m protocol.Message) int64 { return max(m.ReplyTo, m.RefSeq) }

// appendRelated stores a reply or a relation entry once its target allows
// it (PROTOCOL.md, "Replies, edits, deletions and reactions"). The
// conversation's related messages are checked and stored one at a time:
// this engine is the conversation's only writer (its owner, on a
// deployment of several nodes), so the target read is the target as it
// stands when the entry is stored, and two entries never both find a
// target undeleted and then both apply. The backend applies the entry to
// its target with its append (store.Backend.Append). A refused entry is
// answered as a repeat when its (conv, msg_id) is already stored: a
// deletion sent again after its answer was lost finds its target deleted
// — by itself.
func (e *Engine) appendRelated(ctx context.Context, req store.AppendRequest) (store.AppendResult, error) {
	cs, err := e.convs.get(ctx, e.be, req.Msg.Conv)
	if err != nil {
		return store.AppendResult{}, fmt.Errorf("append to %s: %w", req.Msg.Conv, err)
	}
	cs.related.Lock()
	defer cs.related.Unlock()
	if err := e.checkRelated(ctx, req.Msg); err != nil {
		var refusal *store.Refusal
		if !errors.As(err, &refusal) {
			return store.AppendResult{}, fmt.Errorf("append to %s: %w", req.Msg.Conv, err)
		}
		res, repeat, rerr := e.repeatOf(ctx, req.Msg)
		if rerr != nil {
			return store.AppendResult{}, fmt.Errorf("append to %s: %w", req.Msg.Conv, rerr)
		}
		if repeat {
			return res, nil
		}
		return store.AppendResult{}, err
	}
	return e.appendMessage(ctx, req)
}

// repeatOf returns the stored message m repeats, when (conv, msg_id) is
// stored: ErrMsgIDTaken when it is another sender's.
func (e *Engine) repeatOf(ctx context.Context, m protocol.Message) (store.AppendResult, bool, error) {
	seq, err := e.be.MessageSeq(ctx, m.Conv, m.MsgID)
	if errors.Is(err, store.ErrNotFound) {
		return store.AppendResult{}, false, nil
	}
	if err != nil {
		return store.AppendResult{}, false, err
	}
	orig, err := e.be.Message(ctx, m.Conv, seq)
	if err != nil {
		return store.AppendResult{}, false, err
	}
	if orig.From != m.From {
		return store.AppendResult{}, false, store.ErrMsgIDTaken
	}
	return store.AppendResult{Msg: orig, Duplicate: true}, true, nil
}

// checkRelated checks m's target by the rules of the contract: a
// *store.Refusal when they refuse it.
func (e *Engine) checkRelated(ctx context.Context, m protocol.Message) error {
	if m.ReplyTo != 0 {
		target, err := e.target(ctx, m.Conv, m.ReplyTo, "reply_to")
		if err != nil {
			return err
		}
		if target.IsRelation() {
			return store.Refuse(protocol.CodeInvalid, "reply_to %d is a %s entry, not a message", m.ReplyTo, target.Kind)
		}
		return nil
	}
	target, err := e.target(ctx, m.Conv, m.RefSeq, "ref")
	if err != nil {
		return err
	}
	return e.relationAllowed(m, target)
}

// target reads the message at seq that a reply or relation entry names
// by its field field: a refusal when there is none.
func (e *Engine) target(ctx context.Context, conv string, seq int64, field string) (protocol.Message, error) {
	target, err := e.be.Message(ctx, conv, seq)
	if errors.Is(err, store.ErrNotFound) {
		return target, store.Refuse(protocol.CodeInvalid, "%s %d names no message of %s", field, seq, conv)
	}
	return target, err
}

// relationAllowed applies the rules of relation entry rel to its target
// as it stands: an ordinary message not deleted; edited or deleted only by
// its sender, within the edit window.
func (e *Engine) relationAllowed(rel, target protocol.Message) error {
	switch {
	case target.Kind == protocol.KindSystem:
		return store.Refuse(protocol.CodeInvalid, "ref %d is a system message: it takes no %s", rel.RefSeq, rel.Kind)
	case target.IsRelation():
		return store.Refuse(protocol.CodeInvalid, "ref %d is a %s entry, not a message", rel.RefSeq, target.Kind)
	case target.Deleted:
		return store.Refuse(protocol.CodeInvalid, "message %d is deleted", rel.RefSeq)
	case rel.Kind == protocol.KindReaction:
		return nil
	case target.From != rel.From:
		return store.Refuse(protocol.CodeForbidden, "only its sender can %s message %d", verb(rel.Kind), rel.RefSeq)
	}
	if e.editWindow > 0 && e.nowMS()-target.ServerTS > e.editWindow.Milliseconds() {
		return store.Refuse(protocol.CodeInvalid, "message %d is too old to %s: a message can be edited or deleted for %s after it is sent",
			rel.RefSeq, verb(rel.Kind), formatWindow(e.editWindow))
	}
	return nil
}

// verb is what a relation kind does, for the answers' texts.
func verb(kind string) string {
	if kind == protocol.KindDelete {
		return "delete"
	}
	return kind
}

// formatWindow writes an edit window as people read it: "48h", "90m".
func formatWindow(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
