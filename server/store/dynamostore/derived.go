package dynamostore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// applyWorkers bounds the rows Apply writes at once.
const applyWorkers = 16

// Apply implements store.Backend: every row its own conditional write
// (see store.Derived for each rule), applyWorkers at a time. A row's
// condition that does not hold means the stored row is already newer: not
// an error. The first error is returned; the rows written stay written
// (they are idempotent). Totals are not written: they are summed from the
// sessions where they are read (totals.go).
//
// The rows go in an order that a crash at any point leaves repairable:
//
//  1. each user's sessions in ascending active_ts;
//  2. boundaries, pending rows and former members' views: after the
//     sessions, so that a read whose session was written and boundary not
//     moves the boundary when the client sends it again (the other order
//     would leave nothing to move and the session unread);
//  3. the conversations' heads, last: a conversation's derived watermark
//     rises only once everything derived below it is written, so a crash
//     before leaves it behind, and the next operation on it (or a repair)
//     derives it again.
func (s *Backend) Apply(ctx context.Context, d store.Derived) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	writes := userWrites(d)
	direct, rest := directRaises(d.Boundaries)
	d.Boundaries = rest
	heads := map[string]bool{}
	for _, c := range d.Convs {
		heads[c.Conv] = true
	}
	err := s.phase(ctx, func(g *errgroup.Group, ctx context.Context) {
		for _, w := range writes {
			g.Go(func() error {
				var until func() time.Time
				if d.Hold != nil {
					release, u, ok := d.Hold(w.user)
					if !ok {
						return nil
					}
					defer release()
					until = u
				}
				return s.writeUser(ctx, w, until)
			})
		}
	}, func(g *errgroup.Group, ctx context.Context) {
		s.memberRows(ctx, g, d)
		for conv, attrs := range direct {
			if !heads[conv] {
				g.Go(func() error { return s.raiseAttrs(ctx, conv, attrs) })
			}
		}
	}, func(g *errgroup.Group, ctx context.Context) {
		for _, c := range d.Convs {
			g.Go(func() error { return s.applyConv(ctx, c, direct[c.Conv]) })
		}
	})
	if err != nil {
		return fmt.Errorf("write derived state: %w", err)
	}
	return nil
}

// phase runs each step's writes, applyWorkers at a time, one step after
// another; it stops at the first error.
func (s *Backend) phase(ctx context.Context, steps ...func(g *errgroup.Group, ctx context.Context)) error {
	for _, step := range steps {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(applyWorkers)
		step(g, gctx)
		if err := g.Wait(); err != nil {
			return err
		}
	}
	return nil
}

// memberRows starts the writes of d's boundary, pending and former rows.
// A member's Gone and boundary rows go together, Gone first, as one task:
// the same key's writes in the order given.
func (s *Backend) memberRows(ctx context.Context, g *errgroup.Group, d store.Derived) {
	type boundaryTask struct {
		gone []store.MemberGone
		rows []store.BoundaryRow
	}
	tasks := map[store.MemberKey]*boundaryTask{}
	var order []store.MemberKey
	task := func(k store.MemberKey) *boundaryTask {
		if tasks[k] == nil {
			tasks[k] = &boundaryTask{}
			order = append(order, k)
		}
		return tasks[k]
	}
	for _, gone := range d.Gone {
		t := task(store.MemberKey{User: gone.User, Conv: gone.Conv})
		t.gone = append(t.gone, gone)
	}
	for _, r := range d.Boundaries {
		t := task(store.MemberKey{User: r.User, Conv: r.Conv})
		t.rows = append(t.rows, r)
	}
	for _, k := range order {
		t := tasks[k]
		g.Go(func() error {
			for _, gone := range t.gone {
				if err := s.applyGone(ctx, gone); err != nil {
					return err
				}
			}
			for _, r := range t.rows {
				if err := s.applyBoundary(ctx, r); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for _, p := range d.Pending {
		g.Go(func() error { return s.applyPending(ctx, p) })
	}
	for _, f := range d.Former {
		g.Go(func() error { return s.applyFormer(ctx, f) })
	}
}

// update runs one conditional UpdateItem; false when its condition did
// not hold.
func (s *Backend) update(ctx context.Context, t string, key item, expr, cond string, names map[string]string, values item) (bool, error) {
	_, ok, err := s.updateItem(ctx, t, key, expr, cond, names, values, types.ReturnValueNone)
	return ok, err
}

// updateReturning is update answering the item as the update left it
// (nil when the condition did not hold): DynamoDB returns it with the
// write, at no extra call.
func (s *Backend) updateReturning(ctx context.Context, t string, key item, expr, cond string, names map[string]string, values item) (item, bool, error) {
	return s.updateItem(ctx, t, key, expr, cond, names, values, types.ReturnValueAllNew)
}

// updateItem runs one conditional UpdateItem returning what ret asks for.
func (s *Backend) updateItem(ctx context.Context, t string, key item, expr, cond string, names map[string]string, values item, ret types.ReturnValue) (item, bool, error) {
	in := &dynamodb.UpdateItemInput{
		TableName: s.table(t), Key: key, UpdateExpression: aws.String(expr),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValues: ret,
	}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	out, err := s.db.UpdateItem(ctx, in)
	switch {
	case conditionFailed(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("update %s: %w", t, err)
	}
	return out.Attributes, true, nil
}

// put runs one conditional PutItem; false when its condition did not hold.
func (s *Backend) put(ctx context.Context, t string, it item, cond string, names map[string]string, values item) (bool, error) {
	in := &dynamodb.PutItemInput{TableName: s.table(t), Item: it, ExpressionAttributeNames: names}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	if len(values) > 0 {
		in.ExpressionAttributeValues = values
	}
	_, err := s.db.PutItem(ctx, in)
	switch {
	case conditionFailed(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("put %s: %w", t, err)
	}
	return true, nil
}

// del runs one conditional DeleteItem.
func (s *Backend) del(ctx context.Context, t string, key item, cond string, names map[string]string, values item) error {
	in := &dynamodb.DeleteItemInput{TableName: s.table(t), Key: key}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = names, values
	}
	_, err := s.db.DeleteItem(ctx, in)
	if err != nil && !conditionFailed(err) {
		return fmt.Errorf("delete from %s: %w", t, err)
	}
	return nil
}

// applyGone deletes a member's boundary row if it joined before Before.
func (s *Backend) applyGone(ctx context.Context, g store.MemberGone) error {
	return s.del(ctx, tStatus, userConvKey(g.User, g.Conv), "#j < :b",
		map[string]string{"#j": aJoined}, item{":b": numV(g.Before)})
}

// applyBoundary max-merges a boundary row (read implying delivered); a
// Join row replaces a row of an earlier joining. A row other than a Join
// exists but for a member's first boundary, so it is raised first, both
// boundaries in one update, and put only when that found no row: one
// call in the common case.
func (s *Backend) applyBoundary(ctx context.Context, r store.BoundaryRow) error {
	key := userConvKey(r.User, r.Conv)
	delivered := max(r.DeliveredSeq, r.ReadSeq)
	names := map[string]string{"#u": aUser, "#d": aDelivered, "#r": aRead}
	raiseBoth := func() (bool, error) {
		return s.update(ctx, tStatus, key, "SET #d = :d, #r = :r", "attribute_exists(#u) AND #d <= :d AND #r <= :r",
			names, item{":d": numV(delivered), ":r": numV(r.ReadSeq)})
	}
	row := item{aUser: strV(r.User), aConv: strV(r.Conv), aDelivered: numV(delivered), aRead: numV(r.ReadSeq), aJoined: numV(r.JoinedSeq)}
	if r.Join {
		ok, err := s.put(ctx, tStatus, row, "attribute_not_exists(#u) OR #j < :j", map[string]string{"#u": aUser, "#j": aJoined}, item{":j": numV(r.JoinedSeq)})
		if err != nil || ok {
			return err
		}
		if ok, err := raiseBoth(); err != nil || ok {
			return err
		}
	} else {
		if ok, err := raiseBoth(); err != nil || ok {
			return err
		}
		ok, err := s.put(ctx, tStatus, row, "attribute_not_exists(#u)", map[string]string{"#u": aUser}, nil)
		if err != nil || ok {
			return err
		}
	}
	// The row exists with one boundary above the row's: raise the other.
	for _, f := range []struct {
		attr string
		v    int64
	}{{aDelivered, delivered}, {aRead, r.ReadSeq}} {
		if f.v == 0 {
			continue
		}
		if _, err := s.update(ctx, tStatus, key, "SET #a = :v", "attribute_exists(#u) AND #a < :v",
			map[string]string{"#u": aUser, "#a": f.attr}, item{":v": numV(f.v)}); err != nil {
			return err
		}
	}
	return nil
}

// applyPending clears a pending row at or below Clear, then puts one if
// absent: with both, one put on condition that the row is absent or
// cleared by Clear (what a delete then a put if absent would leave).
func (s *Backend) applyPending(ctx context.Context, p store.PendingRow) error {
	row := item{aReceiver: strV(p.User), aConv: strV(p.Conv), aFirst: numV(p.FirstUndelivered)}
	switch {
	case p.FirstUndelivered > 0 && p.Clear > 0:
		_, err := s.put(ctx, tPending, row, "attribute_not_exists(#r) OR #f <= :c",
			map[string]string{"#r": aReceiver, "#f": aFirst}, item{":c": numV(p.Clear)})
		return err
	case p.Clear > 0:
		return s.del(ctx, tPending, pendingKey(p.User, p.Conv), "#f <= :c", map[string]string{"#f": aFirst}, item{":c": numV(p.Clear)})
	case p.FirstUndelivered > 0:
		_, err := s.put(ctx, tPending, row, "attribute_not_exists(#r)", map[string]string{"#r": aReceiver}, nil)
		return err
	}
	return nil
}

// A user's sessions and totals are ordered by (fence, then active_ts or
// at), the rule of session.Newest: a row written under a newer lease epoch wins whatever its clock, a
// row of an older epoch never does (its writer lost the user's shard since:
// see store.Derived.Fences), and within one epoch the newer clock wins. A
// row without a fence attribute was written at epoch 0. newerCond is that
// order as a DynamoDB condition on the stored row for a writer at fence,
// with #k the clock attribute, :k the row's clock and :f the fence.
func newerCond(fence int64) string {
	unfenced := "(attribute_not_exists(#f) AND #k < :k)"
	if fence > 0 {
		unfenced = "attribute_not_exists(#f)"
	}
	return "attribute_not_exists(#u) OR " + unfenced + " OR #f < :f OR (#f = :f AND #k < :k)"
}

// sameEpochCond holds when the stored row was written at fence (an
// unfenced row at 0): the only rows whose ticks a rise in place merges.
func sameEpochCond(fence int64) string {
	if fence > 0 {
		return "#f = :f"
	}
	return "(attribute_not_exists(#f) OR #f = :f)"
}

// applySession writes a session newer than the stored one (see newerCond);
// at the same epoch and active_ts, a rise of the ticks written in place is
// max-merged into the stored row.
func (s *Backend) applySession(ctx context.Context, st session.State, fence int64) error {
	it := sessionItem(st)
	it[aFence] = numV(fence)
	ok, err := s.put(ctx, tSessions, it, newerCond(fence),
		map[string]string{"#u": aUser, "#k": aActiveTS, "#f": aFence},
		item{":k": numV(st.ActiveTS), ":f": numV(fence)})
	if err != nil || ok {
		return err
	}
	key := userConvKey(st.User, st.Conv)
	for _, f := range []struct {
		attr string
		v    int64
	}{{aTickDeliv, st.Ticks.DeliveredSeq}, {aTickRead, st.Ticks.ReadSeq}} {
		if f.v == 0 {
			continue
		}
		if _, err := s.update(ctx, tSessions, key, "SET #t = :v", "#a = :a AND #t < :v AND "+sameEpochCond(fence),
			map[string]string{"#a": aActiveTS, "#t": f.attr, "#f": aFence},
			item{":a": numV(st.ActiveTS), ":v": numV(f.v), ":f": numV(fence)}); err != nil {
			return err
		}
	}
	return nil
}

// applyConv max-merges a conversation's tick minimum and raises its
// derived watermark (all three at once when all rise), with a direct
// chat's boundaries (direct.go) in the same write, then drops the behind
// marker once the watermark reached the max seq. The raise answers the
// item as it left it, so the marker's removal is tried only when that
// item says it is due (or when nothing rose, and so nothing was seen).
func (s *Backend) applyConv(ctx context.Context, c store.ConvDerived, boundaries []attrRaise) error {
	key := convKey(c.Conv)
	set, cond, names, values := raiseClauses(boundaries)
	names["#c"], names["#d"], names["#td"], names["#tr"] = aConv, aDerivedSeq, aTickDeliv, aTickRead
	values[":d"], values[":td"], values[":tr"] = numV(c.DerivedSeq), numV(c.Ticks.DeliveredSeq), numV(c.Ticks.ReadSeq)
	after, ok, err := s.updateReturning(ctx, tConvs, key, "SET "+strings.Join(append([]string{"#d = :d, #td = :td, #tr = :tr"}, set...), ", "),
		strings.Join(append([]string{"attribute_exists(#c) AND #d <= :d AND #td <= :td AND #tr <= :tr"}, cond...), " AND "), names, values)
	if err != nil {
		return err
	}
	if !ok {
		for _, f := range []struct {
			attr string
			v    int64
		}{{aDerivedSeq, c.DerivedSeq}, {aTickDeliv, c.Ticks.DeliveredSeq}, {aTickRead, c.Ticks.ReadSeq}} {
			if f.v == 0 {
				continue
			}
			it, ok, err := s.updateReturning(ctx, tConvs, key, "SET #a = :v", "attribute_exists(#c) AND #a < :v",
				map[string]string{"#c": aConv, "#a": f.attr}, item{":v": numV(f.v)})
			if err != nil {
				return err
			}
			if ok {
				after = it
			}
		}
		if err := s.raiseEach(ctx, c.Conv, boundaries); err != nil {
			return err
		}
	}
	if after != nil && !behindDue(after) {
		return nil
	}
	_, err = s.update(ctx, tConvs, key, "REMOVE #b", "attribute_exists(#b) AND #m <= #d AND attribute_not_exists(#p)",
		map[string]string{"#b": aBehind, "#m": aMaxSeq, "#d": aDerivedSeq, "#p": aPendingCh}, nil)
	return err
}

// behindDue says whether a conversation's item carries a behind marker
// its state no longer justifies (the condition of applyConv's removal).
func behindDue(c item) bool {
	return c.has(aBehind) && c.num(aMaxSeq) <= c.num(aDerivedSeq) && !c.has(aPendingCh)
}

// applyFormer puts or deletes a former member's view.
func (s *Backend) applyFormer(ctx context.Context, f store.FormerRow) error {
	if f.Delete {
		return s.del(ctx, tFormer, userConvKey(f.User, f.Conv), "", nil, nil)
	}
	it := userConvKey(f.User, f.Conv)
	it.setStr(aTitle, f.Title)
	_, err := s.put(ctx, tFormer, it, "", nil, nil)
	return err
}
