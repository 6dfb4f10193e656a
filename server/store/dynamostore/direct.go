package dynamostore

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// A direct chat's two members' boundaries live on its conversation's
// item, not in message_status: "bd_a"/"br_a" (delivered, read) for the
// member first in the conversation's id, "bd_b"/"br_b" for the other.
// Every boundary row of a direct chat comes in the batch that carries its
// conversation's head (a send's and a mark's rows are put with it), so
// both are one write (applyConv) instead of one each. The rows a batch
// carries without the head are written alone, on the same item. Rows
// stored in message_status before this layout are still read: a
// boundary is the higher of the two.

// directAttrs names the attributes of user's boundaries on direct chat
// conv's item; false when conv is not a direct chat of user's.
func directAttrs(conv, user string) (delivered, read string, ok bool) {
	c, parsed := protocol.ParseConv(conv)
	if !parsed || c.Kind != protocol.ConvDirect {
		return "", "", false
	}
	switch user {
	case c.A:
		return "bd_a", "br_a", true
	case c.B:
		return "bd_b", "br_b", true
	}
	return "", "", false
}

// directBoundary is user's boundaries as direct chat conv's item holds
// them; false when it holds none.
func directBoundary(c item, conv, user string) (delivered, read int64, ok bool) {
	d, r, isDirect := directAttrs(conv, user)
	if !isDirect || c == nil || !c.has(d) {
		return 0, 0, false
	}
	return c.num(d), c.num(r), true
}

// attrRaise is an attribute raised to a value (never lowered).
type attrRaise struct {
	name string
	v    int64
}

// directRaises splits boundary rows into the attributes they raise on
// their direct chats' items, by conversation, and the other rows.
func directRaises(rows []store.BoundaryRow) (direct map[string][]attrRaise, rest []store.BoundaryRow) {
	byConv := map[string]map[string]int64{}
	for _, r := range rows {
		d, rd, ok := directAttrs(r.Conv, r.User)
		if !ok || r.Join {
			rest = append(rest, r)
			continue
		}
		if byConv[r.Conv] == nil {
			byConv[r.Conv] = map[string]int64{}
		}
		m := byConv[r.Conv]
		m[d] = max(m[d], r.DeliveredSeq, r.ReadSeq)
		m[rd] = max(m[rd], r.ReadSeq)
	}
	direct = map[string][]attrRaise{}
	for conv, m := range byConv {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			direct[conv] = append(direct[conv], attrRaise{name, m[name]})
		}
	}
	return direct, rest
}

// raiseAttrs raises attrs on conv's item, each only upward, in one write
// when all of them rise (else one write per attribute that does).
func (s *Backend) raiseAttrs(ctx context.Context, conv string, attrs []attrRaise) error {
	if len(attrs) == 0 {
		return nil
	}
	set, cond, names, values := raiseClauses(attrs)
	names["#c"] = aConv
	ok, err := s.update(ctx, tConvs, convKey(conv), "SET "+strings.Join(set, ", "),
		"attribute_exists(#c) AND "+strings.Join(cond, " AND "), names, values)
	if err != nil || ok {
		return err
	}
	return s.raiseEach(ctx, conv, attrs)
}

// raiseEach raises each of attrs on conv's item on its own, where it
// rises.
func (s *Backend) raiseEach(ctx context.Context, conv string, attrs []attrRaise) error {
	for _, a := range attrs {
		if _, err := s.update(ctx, tConvs, convKey(conv), "SET #a = :v", "attribute_exists(#c) AND (attribute_not_exists(#a) OR #a < :v)",
			map[string]string{"#c": aConv, "#a": a.name}, item{":v": numV(a.v)}); err != nil {
			return err
		}
	}
	return nil
}

// raiseClauses are the SET clauses and conditions that raise attrs, with
// their names (#r0, #r1...) and values (:r0, :r1...).
func raiseClauses(attrs []attrRaise) (set, cond []string, names map[string]string, values item) {
	names, values = map[string]string{}, item{}
	for i, a := range attrs {
		n, v := "#r"+strconv.Itoa(i), ":r"+strconv.Itoa(i)
		names[n], values[v] = a.name, numV(a.v)
		set = append(set, n+" = "+v)
		cond = append(cond, "(attribute_not_exists("+n+") OR "+n+" <= "+v+")")
	}
	return set, cond, names, values
}
