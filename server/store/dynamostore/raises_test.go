package dynamostore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	smithymiddleware "github.com/aws/smithy-go/middleware"

	"github.com/imcore/im/internal/testservices"
	"github.com/imcore/im/protocol"
)

// TestAppendsInFlightShareOneMaxSeqRaise: while one raise of a
// conversation's max seq is written, the raises asked meanwhile wait and
// are written as one, to the highest seq among them; each returns only
// once a raise to its seq or above is written.
func TestAppendsInFlightShareOneMaxSeqRaise(t *testing.T) {
	var updates atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	s := backendCalling(t, func(_ context.Context, op string) {
		if op == "UpdateItem" {
			updates.Add(1)
			first.Do(func() {
				close(entered)
				<-release
			})
		}
	})
	conv, _ := protocol.DirectConv("alice", "bob")

	const n = 8
	errs := make(chan error, n)
	go func() { errs <- s.raise(t.Context(), conv, 1, 1, protocol.ConvDirect) }()
	<-entered
	for seq := int64(2); seq <= n; seq++ {
		go func() { errs <- s.raise(t.Context(), conv, seq, seq, protocol.ConvDirect) }()
	}
	// Every later raise is waiting behind the one held.
	deadline := time.Now().Add(10 * time.Second)
	for waiting(s, conv) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d raises waiting, want %d", waiting(s, conv), n)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-errs:
		t.Fatalf("a raise returned before any was written: %v", err)
	default:
	}
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := updates.Load(); got != 2 {
		t.Errorf("%d UpdateItem calls for %d raises, want 2 (the one held, then one for the rest)", got, n)
	}
	rec, err := s.Conversation(t.Context(), conv)
	if err != nil {
		t.Fatal(err)
	}
	if rec.MaxSeq != n {
		t.Errorf("max seq = %d, want %d", rec.MaxSeq, n)
	}
}

// waiting counts the raises of conv waiting, the one being written
// included.
func waiting(s *Backend, conv string) int {
	s.raises.mu.Lock()
	defer s.raises.mu.Unlock()
	if c := s.raises.convs[conv]; c != nil {
		return len(c.waiting)
	}
	return 0
}

// TestARaiseCoversTheSeqsGivenBehindIt: a raise goes up to the highest
// seq the owner has given, so the appends in flight behind it, whose seqs
// it covers, write nothing to the conversation; a seq above it is raised
// again.
func TestARaiseCoversTheSeqsGivenBehindIt(t *testing.T) {
	s, calls := countingBackend(t)
	conv, _ := protocol.DirectConv("alice", "bob")
	maxSeq := func() int64 {
		t.Helper()
		rec, err := s.Conversation(t.Context(), conv)
		if err != nil {
			t.Fatal(err)
		}
		return rec.MaxSeq
	}

	// Seq 1 raised while the owner has given seqs up to 4.
	start := calls.Load()
	if err := s.raise(t.Context(), conv, 1, 4, protocol.ConvDirect); err != nil {
		t.Fatal(err)
	}
	raised := calls.Load() - start
	if got := maxSeq(); got != 4 {
		t.Fatalf("max seq after a raise of seq 1 with 4 given = %d, want 4", got)
	}
	start = calls.Load()
	for seq := int64(2); seq <= 4; seq++ {
		if err := s.raise(t.Context(), conv, seq, seq, protocol.ConvDirect); err != nil {
			t.Fatal(err)
		}
	}
	if raised != 1 {
		t.Errorf("the raise of seq 1 took %d calls, want 1", raised)
	}
	if got := calls.Load() - start; got != 0 {
		t.Errorf("seqs 2 to 4, given before seq 1 was raised, took %d calls, want 0", got)
	}
	// Seq 5 was not given then: it is raised.
	start = calls.Load()
	if err := s.raise(t.Context(), conv, 5, 5, protocol.ConvDirect); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load() - start; got != 1 {
		t.Errorf("the raise of seq 5 took %d calls, want 1", got)
	}
	if got := maxSeq(); got != 5 {
		t.Errorf("max seq = %d, want 5", got)
	}
}

// countingBackend is a fresh backend whose DynamoDB calls are counted.
func countingBackend(t *testing.T) (*Backend, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	s := backendCalling(t, func(_ context.Context, op string) {
		if op != "DescribeTable" {
			calls.Add(1)
		}
	})
	return s, &calls
}

// backendCalling is a fresh backend that runs before(the call's context,
// its operation) before each of its DynamoDB calls.
func backendCalling(t *testing.T, before func(ctx context.Context, op string)) *Backend {
	t.Helper()
	hook := smithymiddleware.InitializeMiddlewareFunc("before", func(ctx context.Context, in smithymiddleware.InitializeInput, next smithymiddleware.InitializeHandler) (smithymiddleware.InitializeOutput, smithymiddleware.Metadata, error) {
		before(ctx, awsmiddleware.GetOperationName(ctx))
		return next.HandleInitialize(ctx, in)
	})
	db, err := NewClient(t.Context(), testservices.DynamoDB(t), "us-east-1", func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *smithymiddleware.Stack) error {
			return st.Initialize.Add(hook, smithymiddleware.After)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := openFresh(t, nil)
	s.db = db
	return s
}
