package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/imcore/im/server/store"
)

// Apply implements store.Backend: every row of d in one write of the
// writer's next batch. Each statement is an idempotent update (see
// store.Derived), so a batch applied late or twice changes nothing more.
func (s *Backend) Apply(ctx context.Context, d store.Derived) error {
	if d.Empty() {
		return nil
	}
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error { return s.applyTx(ctx, tx, d) })
	if err != nil {
		return fmt.Errorf("write derived state: %w", err)
	}
	return nil
}

func (s *Backend) applyTx(ctx context.Context, tx *sql.Tx, d store.Derived) error {
	exec := func(query string, args ...any) error {
		_, err := s.execTx(ctx, tx, query, args...)
		return err
	}
	for _, g := range d.Gone {
		if err := exec(qBoundaryGone, g.User, g.Conv, g.Before); err != nil {
			return err
		}
	}
	for _, b := range d.Boundaries {
		var err error
		if b.Join {
			err = exec(qBoundaryJoin, b.User, b.Conv, b.DeliveredSeq, b.ReadSeq, b.JoinedSeq)
		} else {
			err = exec(qBoundaryMerge, b.User, b.Conv, b.DeliveredSeq, b.ReadSeq)
		}
		if err != nil {
			return err
		}
	}
	for _, p := range d.Pending {
		if p.Clear > 0 {
			if err := exec(qPendingClear, p.User, p.Conv, p.Clear); err != nil {
				return err
			}
		}
		if p.FirstUndelivered > 0 {
			if err := exec(qPendingPut, p.User, p.Conv, p.FirstUndelivered); err != nil {
				return err
			}
		}
	}
	for _, st := range d.Sessions {
		if err := exec(qSessionPut, st.User, st.Conv, st.ReadSeq, st.WriteSeq, st.UnreadCount, st.ActiveTS, st.WriteTS,
			st.Muted, st.MuteUntil, st.Priority, st.Deleted, st.MarkedUnread, st.Category, st.SubBiz, st.LastConv, st.LastSeq,
			st.Ticks.DeliveredSeq, st.Ticks.ReadSeq, st.Request); err != nil {
			return err
		}
	}
	for _, t := range d.Totals {
		if err := exec(qTotalPut, t.User, t.List, t.Total, t.At); err != nil {
			return err
		}
	}
	for _, c := range d.Convs {
		if err := exec(qConvDerived, c.Ticks.DeliveredSeq, c.Ticks.ReadSeq, c.DerivedSeq, c.Conv); err != nil {
			return err
		}
	}
	for _, f := range d.Former {
		var err error
		if f.Delete {
			err = exec(qFormerDelete, f.User, f.Conv)
		} else {
			err = exec(qFormerPut, f.User, f.Conv, f.Title)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
