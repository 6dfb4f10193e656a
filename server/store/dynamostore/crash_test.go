package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/imcore/im/internal/testservices"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// errKilled is what every call of a process "killed" by dieAfter gets.
var errKilled = errors.New("the process was killed")

// killer makes a client's calls fail once armed: a process killed
// between two of its writes.
type killer struct {
	armed atomic.Bool
	left  atomic.Int64
}

// dieAfter lets the client's next n calls through and fails every one
// after.
func (k *killer) dieAfter(n int64) {
	k.left.Store(n)
	k.armed.Store(true)
}

// option is the client option through which k kills.
func (k *killer) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("die", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if k.armed.Load() && k.left.Add(-1) < 0 {
				return middleware.InitializeOutput{}, middleware.Metadata{}, errKilled
			}
			// A call let through runs to its end even when the writer
			// cancels it (its other calls were killed): what reaches the
			// tables is then known once Apply returns.
			return next.HandleInitialize(context.WithoutCancel(ctx), in)
		}), middleware.Before)
	})
	o.RetryMaxAttempts = 1
}

// TestApplyCutAtEveryPointIsRepairable kills the writer of a message's
// derived rows after each of its writes in turn, and checks what a
// reader finds then: the recipient's unread total agrees with its
// sessions (totals are summed from them), and the conversation's derived
// watermark has risen only if every row below it is written (else the
// message is derived again by whoever enters the conversation next).
func TestApplyCutAtEveryPointIsRepairable(t *testing.T) {
	s, e := openFresh(t, nil)
	ctx := t.Context()
	for cut := int64(0); ; cut++ {
		alice, bob := fmt.Sprintf("alice%d", cut), fmt.Sprintf("bob%d", cut)
		conv, _ := protocol.DirectConv(alice, bob)
		mustAppend(t, s, message(conv, alice, "m1"))
		var k killer
		db, err := NewClient(ctx, testservices.DynamoDB(t), "us-east-1", k.option)
		if err != nil {
			t.Fatal(err)
		}
		dying, err := Open(ctx, Options{DynamoDB: db, Redis: e.redis, Prefix: s.prefix})
		if err != nil {
			t.Fatal(err)
		}
		k.dieAfter(cut)
		d := messageDerived(alice, bob, conv)
		err = dying.Apply(ctx, d)
		if err != nil && !errors.Is(err, errKilled) {
			t.Fatalf("cut after %d writes: %v", cut, err)
		}
		checkCut(t, s, cut, alice, bob, conv)
		if err == nil {
			if cut < 6 {
				t.Fatalf("Apply finished in %d writes: the test cuts nothing", cut)
			}
			return
		}
	}
}

// messageDerived is what the engine derives from alice's first message to
// bob, written with another change of bob's (a session of his with carol
// marked unread) in the same batch: sessions, bob's total and pending
// row, alice's boundaries, the conversation's head.
func messageDerived(alice, bob, conv string) store.Derived {
	last := func(user string, unread int64, ts int64) session.State {
		return session.State{User: user, Conv: conv, WriteSeq: 1, ReadSeq: 1 - unread, UnreadCount: unread,
			ActiveTS: ts, WriteTS: ts, LastConv: conv, LastSeq: 1}
	}
	other, _ := protocol.DirectConv(bob, "carol")
	marked := session.State{User: bob, Conv: other, UnreadCount: 1, MarkedUnread: true, ActiveTS: 300}
	return store.Derived{
		Boundaries: []store.BoundaryRow{{User: alice, Conv: conv, DeliveredSeq: 1, ReadSeq: 1}},
		Pending:    []store.PendingRow{{User: bob, Conv: conv, FirstUndelivered: 1}},
		Sessions:   []session.State{last(alice, 0, 100), marked, last(bob, 1, 200)},
		Totals:     []store.TotalRow{{User: bob, List: "", Total: 1, At: 200}, {User: bob, List: "", Total: 2, At: 300}},
		Convs:      []store.ConvDerived{{Conv: conv, DerivedSeq: 1}},
	}
}

// checkCut checks what a reader finds after the writer died.
func checkCut(t *testing.T, s *Backend, cut int64, alice, bob, conv string) {
	t.Helper()
	ctx := t.Context()
	rec, err := s.User(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := s.Sessions(ctx, conv, []string{alice, bob})
	if err != nil {
		t.Fatal(err)
	}
	bobs := sessions[bob]
	other, _ := protocol.DirectConv(bob, "carol")
	others, err := s.Sessions(ctx, other, []string{bob})
	if err != nil {
		t.Fatal(err)
	}
	marked, markedWritten := others[bob]
	if got, want := rec.Totals[""], bobs.UnreadContribution()+marked.UnreadContribution(); got != want {
		t.Errorf("cut after %d writes: bob's total is %d, his sessions say %d", cut, got, want)
	}
	if markedWritten && bobs.ActiveTS == 0 {
		t.Errorf("cut after %d writes: bob's later session (active_ts 300) is written without the earlier one (200)", cut)
	}
	if want := max(bobs.ActiveTS, marked.ActiveTS); rec.Clock != want {
		t.Errorf("cut after %d writes: bob's clock %d, his newest session's active_ts %d", cut, rec.Clock, want)
	}
	_, total, err := s.SessionPage(ctx, bob, store.SyncQuery{Limit: 10})
	if err != nil || total != rec.Totals[""] {
		t.Errorf("cut after %d writes: the sync page's total is %d (%v), User's %d", cut, total, err, rec.Totals[""])
	}
	left, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 s.table(tUsers),
		KeyConditionExpression:    aws.String("#u = :u"),
		ExpressionAttributeNames:  map[string]string{"#u": aUser},
		ExpressionAttributeValues: item{":u": strV(bob)},
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range left {
		t.Errorf("cut after %d writes: Apply left bob's item %q in the users table (totals are summed, not stored)", cut, it.str(aItem))
	}
	c, err := s.Conversation(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	if c.DerivedSeq < 1 {
		return // behind: derived again by the next operation or repair
	}
	var bobRec, aliceRec store.MemberRecord
	for _, m := range c.Members {
		switch m.User {
		case alice:
			aliceRec = m
		case bob:
			bobRec = m
		}
	}
	if !bobRec.IsPending || bobRec.FirstUndelivered != 1 {
		t.Errorf("cut after %d writes: watermark at %d but bob's pending row is %+v", cut, c.DerivedSeq, bobRec)
	}
	if aliceRec.ReadSeq != 1 {
		t.Errorf("cut after %d writes: watermark at %d but alice's read boundary is %d", cut, c.DerivedSeq, aliceRec.ReadSeq)
	}
	if sessions[alice].WriteSeq != 1 || bobs.WriteSeq != 1 {
		t.Errorf("cut after %d writes: watermark at %d but the sessions are %+v", cut, c.DerivedSeq, sessions)
	}
}
