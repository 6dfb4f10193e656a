package chat_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
)

// BenchmarkReactions100 has the 100 members of a group react to one
// message, one after another: an op is one reaction, send to sent (the
// target read and checked, the entry stored with its effect on the
// target, every member's session derived, the entry pushed to 100). It
// reports the size on the wire of the target with every reaction standing
// (half the members 👍, the rest four others). BenchmarkMessages100 is
// the same with plain messages, for comparison.
func BenchmarkReactions100(b *testing.B) {
	svc, _, conv, callers := newGroupService(b, 100)
	target, perr := svc.Send(b.Context(), callers[0], &protocol.Send{Conv: conv, MsgID: "target", Body: "react to me", ClientTS: 1})
	if perr != nil {
		b.Fatal(perr)
	}
	bodies := []string{"👍", "🎉", "❤️", "😂", "👀"}
	for i := 0; b.Loop(); i++ {
		c := callers[i%len(callers)]
		body := bodies[0]
		if i%2 == 1 {
			body = bodies[1+i/2%4]
		}
		send := &protocol.Send{Conv: conv, MsgID: fmt.Sprintf("r%d", i), Kind: protocol.KindReaction, RefSeq: target.Seq, Body: body, ClientTS: time.Now().UnixMilli()}
		if _, perr := svc.Send(b.Context(), c, send); perr != nil {
			b.Fatal(perr)
		}
	}
	b.StopTimer()
	page, perr := svc.History(b.Context(), callers[0], &protocol.History{Conv: conv, BeforeSeq: target.Seq + 1, Limit: 1})
	if perr != nil || len(page.Messages) != 1 {
		b.Fatal(perr)
	}
	m := page.Messages[0]
	b.ReportMetric(float64(m.EncodedLen()), "target-bytes")
	b.ReportMetric(float64(len(m.ReactionList())), "distinct")
}

// BenchmarkMessages100 has the 100 members of a group send a message
// each, one after another: the plain send that BenchmarkReactions100
// compares with.
func BenchmarkMessages100(b *testing.B) {
	svc, _, conv, callers := newGroupService(b, 100)
	for i := 0; b.Loop(); i++ {
		send := &protocol.Send{Conv: conv, MsgID: fmt.Sprintf("m%d", i), Body: "👍", ClientTS: time.Now().UnixMilli()}
		if _, perr := svc.Send(b.Context(), callers[i%len(callers)], send); perr != nil {
			b.Fatal(perr)
		}
	}
}
