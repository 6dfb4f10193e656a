package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/internal/testservices"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/backendtest"
	"github.com/imcore/im/server/store/storetest"
)

// memBlobs is a blob.Store in memory.
type memBlobs struct {
	mu   sync.Mutex
	objs map[string][]byte
	puts int
}

func (b *memBlobs) Put(_ context.Context, key string, body []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.objs == nil {
		b.objs = map[string][]byte{}
	}
	b.objs[key] = slices.Clone(body)
	b.puts++
	return nil
}

func (b *memBlobs) Get(_ context.Context, key string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	body, ok := b.objs[key]
	if !ok {
		return nil, blob.ErrNotFound
	}
	return slices.Clone(body), nil
}

// services are the clients of the test services.
type services struct {
	db    *dynamodb.Client
	redis *redis.Client
}

func testServices(t testing.TB) services {
	t.Helper()
	endpoint, redisURL := testservices.DynamoDB(t), testservices.Redis(t)
	db, err := NewClient(t.Context(), endpoint, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opts)
	t.Cleanup(func() { rc.Close() })
	return services{db: db, redis: rc}
}

// openFresh migrates tables under a fresh prefix and opens a store on
// them, closed when the test ends.
func openFresh(t testing.TB, blobs blob.Store) (*Backend, services) {
	t.Helper()
	e := testServices(t)
	prefix := testservices.Prefix(t)
	if _, err := Migrate(t.Context(), e.db, prefix); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	s, err := Open(t.Context(), Options{DynamoDB: e.db, Redis: e.redis, Prefix: prefix, Blobs: blobs})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		deleteTables(e.db, prefix)
	})
	return s, e
}

// deleteTables drops a test's tables (best effort: the service is shared).
func deleteTables(db *dynamodb.Client, prefix string) {
	for _, name := range TableNames(prefix) {
		db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	}
}

func TestBackendConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, blobs blob.Store) store.Backend {
		s, _ := openFresh(t, blobs)
		return s
	})
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Engine {
		s, _ := openFresh(t, &memBlobs{})
		e, err := engine.New(t.Context(), s, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	})
}

func TestOpenMissingTables(t *testing.T) {
	e := testServices(t)
	_, err := Open(t.Context(), Options{DynamoDB: e.db, Redis: e.redis, Prefix: testservices.Prefix(t)})
	if !errors.Is(err, ErrNoTables) {
		t.Fatalf("Open on no tables: %v, want ErrNoTables", err)
	}
}

func TestMigrateIdempotent(t *testing.T) {
	e := testServices(t)
	prefix := testservices.Prefix(t)
	t.Cleanup(func() { deleteTables(e.db, prefix) })
	created, err := Migrate(t.Context(), e.db, prefix)
	if err != nil || !slices.Equal(created, TableNames(prefix)) {
		t.Fatalf("first Migrate = %v, %v; want every table", created, err)
	}
	created, err = Migrate(t.Context(), e.db, prefix)
	if err != nil || len(created) != 0 {
		t.Fatalf("second Migrate = %v, %v; want nothing created", created, err)
	}
	if _, err := Open(t.Context(), Options{DynamoDB: e.db, Redis: e.redis, Prefix: prefix}); err != nil {
		t.Fatalf("Open after Migrate: %v", err)
	}
}

func message(conv, from, id string) protocol.Message {
	return protocol.Message{Conv: conv, MsgID: id, From: from, Body: "body of " + id, ClientTS: 7, ServerTS: 1000}
}

func mustAppend(t *testing.T, s *Backend, m protocol.Message) store.AppendResult {
	t.Helper()
	res, err := s.Append(t.Context(), m)
	if err != nil {
		t.Fatalf("Append(%s): %v", m.MsgID, err)
	}
	return res
}

// allSeqs returns conv's stored seqs and msg_ids in order.
func allSeqs(t *testing.T, s *Backend, conv string) ([]int64, []string) {
	t.Helper()
	msgs, _, err := s.History(t.Context(), conv, store.HistoryQuery{After: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	var ids []string
	for _, m := range msgs {
		seqs, ids = append(seqs, m.Seq), append(ids, m.MsgID)
	}
	return seqs, ids
}

func TestRedisCounterLost(t *testing.T) {
	s, e := openFresh(t, nil)
	const conv = "d:alice:bob"
	for i := 1; i <= 3; i++ {
		mustAppend(t, s, message(conv, "alice", fmt.Sprint("m", i)))
	}
	// Lost entirely (FLUSHALL, a restart without persistence).
	if err := e.redis.Del(t.Context(), s.seqKey(conv)).Err(); err != nil {
		t.Fatal(err)
	}
	if res := mustAppend(t, s, message(conv, "alice", "after-loss")); res.Msg.Seq != 4 || res.Duplicate {
		t.Fatalf("append after the counter was lost = %+v, want seq 4", res)
	}
	// Rolled back (a failover that lost the latest increments).
	if err := e.redis.Set(t.Context(), s.seqKey(conv), 2, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if res := mustAppend(t, s, message(conv, "bob", "after-rollback")); res.Msg.Seq != 5 {
		t.Fatalf("append after the counter went back = %+v, want seq 5", res)
	}
	seqs, ids := allSeqs(t, s, conv)
	if !slices.Equal(seqs, []int64{1, 2, 3, 4, 5}) || !slices.Equal(ids, []string{"m1", "m2", "m3", "after-loss", "after-rollback"}) {
		t.Errorf("log = %v %v", seqs, ids)
	}
	if rec, err := s.Conversation(t.Context(), conv); err != nil || rec.MaxSeq != 5 {
		t.Errorf("Conversation = %+v, %v; want max seq 5", rec, err)
	}
}

func TestRetryFinishesReservedAppend(t *testing.T) {
	s, e := openFresh(t, nil)
	const conv = "d:alice:bob"
	mustAppend(t, s, message(conv, "alice", "m1"))
	// A crash after the reservation at seq 2, before the message write:
	// the counter moved on, the reservation stayed.
	if err := e.redis.Incr(t.Context(), s.seqKey(conv)).Err(); err != nil {
		t.Fatal(err)
	}
	crashed := message(conv, "alice", "cut-short")
	if ok, err := s.reserveID(t.Context(), crashed, 2); err != nil || !ok {
		t.Fatalf("reserve: %v %v", ok, err)
	}
	res := mustAppend(t, s, crashed)
	if res.Duplicate || res.Msg.Seq != 2 || res.Msg.Body != crashed.Body {
		t.Fatalf("retried append = %+v, want it finished at seq 2, not a duplicate", res)
	}
	if again := mustAppend(t, s, crashed); !again.Duplicate || again.Msg.Seq != 2 {
		t.Fatalf("third attempt = %+v, want the duplicate at 2", again)
	}
	next := mustAppend(t, s, message(conv, "bob", "next"))
	seqs, ids := allSeqs(t, s, conv)
	if !slices.Equal(ids, []string{"m1", "cut-short", "next"}) || !slices.Equal(seqs, []int64{1, 2, next.Msg.Seq}) {
		t.Errorf("log = %v %v", seqs, ids)
	}
}

func TestRetryMovesReservationWhenSeqTaken(t *testing.T) {
	s, e := openFresh(t, nil)
	const conv = "d:alice:bob"
	mustAppend(t, s, message(conv, "alice", "m1"))
	// Reserved at 2, never written; then Redis lost the counter and
	// another message took seq 2.
	crashed := message(conv, "alice", "cut-short")
	if ok, err := s.reserveID(t.Context(), crashed, 2); err != nil || !ok {
		t.Fatalf("reserve: %v %v", ok, err)
	}
	if err := e.redis.Del(t.Context(), s.seqKey(conv)).Err(); err != nil {
		t.Fatal(err)
	}
	if res := mustAppend(t, s, message(conv, "bob", "other")); res.Msg.Seq != 2 {
		t.Fatalf("other = %+v, want seq 2", res)
	}
	res := mustAppend(t, s, crashed)
	if res.Duplicate || res.Msg.Seq != 3 {
		t.Fatalf("retried append = %+v, want it moved to seq 3", res)
	}
	seqs, ids := allSeqs(t, s, conv)
	if !slices.Equal(seqs, []int64{1, 2, 3}) || !slices.Equal(ids, []string{"m1", "other", "cut-short"}) {
		t.Errorf("log = %v %v", seqs, ids)
	}
}

func TestArchive(t *testing.T) {
	blobs := &memBlobs{}
	s, _ := openFresh(t, blobs)
	const conv = "d:alice:bob"
	old, recent := message(conv, "alice", "old"), message(conv, "alice", "recent")
	recent.ServerTS = 5000
	mustAppend(t, s, old)
	mustAppend(t, s, recent)
	moved, err := s.Archive(t.Context(), 2000, nil)
	if err != nil || moved != 1 {
		t.Fatalf("Archive = %d, %v; want 1", moved, err)
	}
	if got, _ := blobs.Get(t.Context(), blob.Key(conv, 1)); string(got) != old.Body {
		t.Errorf("blob = %q", got)
	}
	raw, err := s.messageItemAt(t.Context(), conv, 1)
	if err != nil || raw.has(aBody) || raw.str(aS3Ref) != blob.Key(conv, 1) {
		t.Errorf("archived item = %v, %v; want no body and its s3_ref", raw, err)
	}
	if m, err := s.Message(t.Context(), conv, 1); err != nil || m.Body != old.Body {
		t.Errorf("Message(1) = %+v, %v; want the body read back", m, err)
	}
	if msgs, _, err := s.History(t.Context(), conv, store.HistoryQuery{Limit: 5}); err != nil || len(msgs) != 2 || msgs[0].Body != old.Body {
		t.Errorf("History = %+v, %v", msgs, err)
	}
	if moved, err := s.Archive(t.Context(), 2000, nil); err != nil || moved != 0 || blobs.puts != 1 {
		t.Errorf("second Archive = %d, %v, %d puts; want nothing moved", moved, err, blobs.puts)
	}
}

func TestUnreachableIsAnError(t *testing.T) {
	e := testServices(t)
	db, err := NewClient(t.Context(), "http://127.0.0.1:1", "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), Options{DynamoDB: db, Redis: e.redis, Prefix: testservices.Prefix(t)}); err == nil || errors.Is(err, ErrNoTables) {
		t.Fatalf("Open on an unreachable endpoint: %v, want a connection error", err)
	}
	s := &Backend{db: db, redis: e.redis, prefix: testservices.Prefix(t)}
	if _, err := s.Append(t.Context(), message("d:alice:bob", "alice", "m1")); err == nil {
		t.Fatal("Append on an unreachable endpoint succeeded")
	}
	if err := s.Apply(t.Context(), store.Derived{Convs: []store.ConvDerived{{Conv: "d:alice:bob", DerivedSeq: 1}}}); err == nil {
		t.Fatal("Apply on an unreachable endpoint succeeded")
	}
}

func TestTokenEpochs(t *testing.T) {
	s, _ := openFresh(t, nil)
	if e, err := s.TokenEpoch(t.Context(), "alice"); err != nil || e != 0 {
		t.Fatalf("epoch before = %d, %v", e, err)
	}
	if e, err := s.RevokeTokens(t.Context(), "alice"); err != nil || e != 1 {
		t.Fatalf("revoke = %d, %v", e, err)
	}
	if e, err := s.RevokeTokens(t.Context(), "bob"); err != nil || e != 1 {
		t.Fatalf("revoke bob = %d, %v", e, err)
	}
	revs, newest, err := s.RevokedSince(t.Context(), 0)
	if err != nil || len(revs) != 2 || revs[0].User != "alice" || revs[1].User != "bob" || newest != 2 {
		t.Fatalf("RevokedSince(0) = %+v %d %v", revs, newest, err)
	}
	if revs, _, _ := s.RevokedSince(t.Context(), 1); len(revs) != 1 || revs[0].User != "bob" {
		t.Errorf("RevokedSince(1) = %+v", revs)
	}
}

func TestPendingGroupChangeFinishedByReader(t *testing.T) {
	s, _ := openFresh(t, nil)
	const conv = "g:team"
	create := message(conv, "alice", "create")
	create.Kind = protocol.KindSystem
	if _, err := s.ChangeGroup(t.Context(), store.GroupChange{Conv: conv, Create: true, Creator: "alice",
		Title: "team", Add: []string{"alice", "bob"}, Msg: create}); err != nil {
		t.Fatal(err)
	}
	// A crash right after the change was committed on the item: the
	// system message is not written.
	ch := store.GroupChange{Conv: conv, Version: 0, Add: []string{"carol"}, Msg: message(conv, "alice", "add-carol")}
	ch.Msg.Kind, ch.Msg.Seq = protocol.KindSystem, 2
	seq, err := s.nextSeq(t.Context(), conv)
	if err != nil || seq != 2 {
		t.Fatalf("nextSeq = %d, %v", seq, err)
	}
	p := fmt.Sprintf(`{"seq":2,"msg":{"conv":%q,"seq":2,"msg_id":"add-carol","from":"alice","body":%q,"client_ts":7,"server_ts":1000,"kind":"system"},"change":{"add":["carol"]}}`, conv, ch.Msg.Body)
	cur := store.GroupRecord{Conv: conv, Title: "team", Members: map[string]int64{"alice": 1, "bob": 1}}
	next, err := store.ApplyGroupChange(&cur, ch, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.commitChange(t.Context(), cur, next, true, 2, p); err != nil || !ok {
		t.Fatalf("commit: %v %v", ok, err)
	}
	if got, err := s.Unrepaired(t.Context()); err != nil || !slices.Equal(got, []string{conv}) {
		t.Errorf("Unrepaired = %v, %v", got, err)
	}
	rec, err := s.Conversation(t.Context(), conv)
	if err != nil || rec.Version != 1 || rec.MaxSeq != 2 || len(rec.Members) != 3 || rec.Members[2].JoinedSeq != 2 {
		t.Fatalf("Conversation = %+v, %v", rec, err)
	}
	if m, err := s.Message(t.Context(), conv, 2); err != nil || m.MsgID != "add-carol" {
		t.Errorf("system message = %+v, %v", m, err)
	}
	if c, err := s.GroupChangeAt(t.Context(), conv, 2); err != nil || !slices.Equal(c.Add, []string{"carol"}) {
		t.Errorf("GroupChangeAt(2) = %+v, %v", c, err)
	}
	raw, err := s.getItem(t.Context(), tConvs, convKey(conv))
	if err != nil || raw.has(aPendingCh) {
		t.Errorf("pending change still recorded: %v, %v", raw, err)
	}
	if res := mustAppend(t, s, message(conv, "carol", "hello")); res.Msg.Seq != 3 {
		t.Errorf("next append = %+v, want seq 3", res)
	}
}
