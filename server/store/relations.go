package store

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/imcore/im/protocol"
)

// TargetState is what relation entries (edits, deletions, reactions) made
// of the message they target. Every backend stores it with the target's
// row, so that a read of the target shows it as it stands at no extra
// cost (Show). Applying an entry (Apply) is idempotent and commutes with
// applying an older one, so that a relation entry found again in the log
// after a crash can be applied again (Backend.ApplyRelation).
//
// The same type marks an edit entry whose body was erased with its
// target's deletion (Erased).
type TargetState struct {
	// EditSeq is the seq of the edit whose Body and EditedTS the target
	// shows; 0 when never edited.
	EditSeq  int64  ``
	Body     string ``
	EditedTS int64  ``
	// Edits are the seqs of every edit entry applied, ascending: a
	// deletion erases their bodies too.
	Edits   []int64 ``
	Deleted bool    ``
	// Erased marks an edit entry (not a target) whose body was erased
	// because its target was deleted.
	Erased bool ``
	// Reactions holds each user's standing reaction, one per user who
	// ever reacted, ordered by user; a removed one stays with an empty
	// Body, so that an older entry applied again changes nothing.
	Reactions []StandingReaction ``
}

// StandingReaction is a user's latest reaction to a message: Body from
// the relation entry at Seq ("" when the user removed it).
type StandingReaction struct {
	User string ``
	Body string ``
	Seq  int64  ``
}

// RelationChange is what applying a relation entry to its target changed.
type RelationChange struct {
	// Changed is true when the target's state changed (and must be
	// stored).
	Changed bool
	// Erase are the seqs whose stored bodies must be erased: on a
	// deletion the target's and its edits'; an edit applied to a deleted
	// target its own.
	Erase []int64
}

// Apply applies relation entry rel (stored: seq, server_ts set) to the
// target's state. An edit applies when it is newer than the one applied;
// an edit of a deleted target changes nothing and erases itself. A
// deletion erases the target and its edits. A reaction replaces the
// user's standing one when newer.
func (t *TargetState) Apply(rel protocol.Message) RelationChange {
	switch rel.Kind {
	case protocol.KindEdit:
		if t.Deleted {
			return RelationChange{Erase: []int64{rel.Seq}}
		}
		changed := false
		if i, found := slices.BinarySearch(t.Edits, rel.Seq); !found {
			t.Edits = slices.Insert(t.Edits, i, rel.Seq)
			changed = true
		}
		if rel.Seq > t.EditSeq {
			t.EditSeq, t.Body, t.EditedTS = rel.Seq, rel.Body, rel.ServerTS
			changed = true
		}
		return RelationChange{Changed: changed}
	case protocol.KindDelete:
		erase := append([]int64{rel.RefSeq}, t.Edits...)
		if t.Deleted {
			// Erasing again is harmless, and repairs an erasure a crash
			// cut short.
			return RelationChange{Erase: erase}
		}
		t.Deleted, t.Body, t.EditedTS = true, "", 0
		return RelationChange{Changed: true, Erase: erase}
	case protocol.KindReaction:
		i, found := slices.BinarySearchFunc(t.Reactions, rel.From, func(r StandingReaction, user string) int {
			return strings.Compare(r.User, user)
		})
		if found && t.Reactions[i].Seq >= rel.Seq {
			return RelationChange{}
		}
		r := StandingReaction{User: rel.From, Body: rel.Body, Seq: rel.Seq}
		if found {
			t.Reactions[i] = r
		} else {
			t.Reactions = slices.Insert(t.Reactions, i, r)
		}
		return RelationChange{Changed: true}
	}
	return RelationChange{}
}

// ShowsStoredBody reports whether a message with this state shows the
// body stored in its row (false: deleted, erased or edited), so that a
// read need not fetch an archived body it would not show.
func (t *TargetState) ShowsStoredBody() bool {
	return t == nil || !(t.Deleted || t.Erased || t.EditSeq > 0)
}

// Show makes m, read from its row, the message as it stands: the latest
// edit's body and edited_ts, or deleted with an empty body, or an erased
// edit's empty body; and the reactions standing on it. A nil state shows
// m as stored.
func (t *TargetState) Show(m *protocol.Message) {
	if t == nil {
		return
	}
	t.ShowEdits(m)
	m.SetReactions(t.ReactionList())
}

// ShowEdits is Show without the reactions, for a backend that keeps them
// aggregated (ReactionList) from when the state last changed rather than
// aggregating them on every read.
func (t *TargetState) ShowEdits(m *protocol.Message) {
	if t == nil {
		return
	}
	switch {
	case t.Deleted:
		m.Body, m.Deleted, m.EditedTS = "", true, 0
	case t.Erased:
		m.Body = ""
	case t.EditSeq > 0:
		m.Body, m.EditedTS = t.Body, t.EditedTS
	}
}

// ReactionList aggregates the standing reactions: one entry per distinct
// body, ordered by the seq of its oldest standing reaction, its users in
// the order of their reactions' seqs; nil when none stands.
func (t *TargetState) ReactionList() []protocol.Reaction {
	return aggregate(t.standing())
}

// standing returns the reactions standing (not removed), ordered by seq.
func (t *TargetState) standing() []StandingReaction {
	standing := make([]StandingReaction, 0, len(t.Reactions))
	for _, r := range t.Reactions {
		if r.Body != "" {
			standing = append(standing, r)
		}
	}
	slices.SortStableFunc(standing, func(a, b StandingReaction) int { return cmp.Compare(a.Seq, b.Seq) })
	return standing
}

// ErasedEntry is the state of an edit entry whose body was erased.
var ErasedEntry = TargetState{Erased: true}

// Refusal is the error of a write that the messaging rules refuse (a
// relation entry whose target does not allow it); it changed nothing.
// Code is the protocol error code the client is answered with (invalid,
// forbidden), Reason what it is told.
type Refusal struct {
	Code   protocol.Code
	Reason string
}

func (r *Refusal) Error() string { return r.Reason }

// Refuse returns a Refusal with a formatted reason.
func Refuse(code protocol.Code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}
}
