package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
)

const (
	archiveOldTS  = 1700000000000
	archiveCutoff = 1750000000000
	archiveNewTS  = 1763800000000
)

// appendMany queues n messages of conv at server timestamp ts (the writer
// commits them in a few batches) and waits for them.
func appendMany(t *testing.T, s *Backend, conv string, n int, ts int64, prefix string) {
	t.Helper()
	waits := make([]func() (store.AppendResult, error), 0, n)
	for i := range n {
		id := fmt.Sprintf("%s%d", prefix, i)
		wait, err := s.queueAppend(t.Context(), protocol.Message{Conv: conv, MsgID: id, From: "alice", Body: "body of " + id, ClientTS: 1, ServerTS: ts})
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, wait)
	}
	for _, wait := range waits {
		if _, err := wait(); err != nil {
			t.Fatal(err)
		}
	}
}

// rowState counts conv's rows by what they hold: bodies in the row, and
// archived rows (s3_ref set, body empty) whose ref is their blob.Key.
func rowState(t *testing.T, s *Backend, conv string) (inRow, archived int) {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), `SELECT seq, body, s3_ref FROM messages WHERE conv = ?`, conv)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var body, ref string
		if err := rows.Scan(&seq, &body, &ref); err != nil {
			t.Fatal(err)
		}
		switch {
		case ref == "" && body != "":
			inRow++
		case ref == blob.Key(conv, seq) && body == "":
			archived++
		default:
			t.Errorf("row %s/%d: body %q, s3_ref %q", conv, seq, body, ref)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return inRow, archived
}

// checkHistory reads conv's whole history and checks every body.
func checkHistory(t *testing.T, s *Backend, conv string, n int) {
	t.Helper()
	var seen int
	for after := int64(0); ; {
		msgs, more, err := s.History(t.Context(), conv, store.HistoryQuery{After: true, AfterSeq: after, Limit: 100})
		if err != nil {
			t.Fatalf("History after %d: %v", after, err)
		}
		for _, m := range msgs {
			if m.Body != "body of "+m.MsgID {
				t.Fatalf("seq %d: body %q, want %q", m.Seq, m.Body, "body of "+m.MsgID)
			}
			seen++
			after = m.Seq
		}
		if !more {
			break
		}
	}
	if seen != n {
		t.Fatalf("History read %d messages, want %d", seen, n)
	}
}

// Archive moves every old message in bounded batches, reporting progress,
// leaves the newer ones in their rows, and a second run moves nothing;
// the database reopened reads the same.
func TestArchiveBatchesAndIsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "im.db")
	blobs, err := blob.NewDir(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	const conv, old, newer = "d:alice:bob", 2*archiveBatch + 50, 7
	appendMany(t, s, conv, old, archiveOldTS, "old")
	appendMany(t, s, conv, newer, archiveNewTS, "new")
	var progress []int
	moved, err := s.Archive(t.Context(), archiveCutoff, func(n int) { progress = append(progress, n) })
	if err != nil || moved != old {
		t.Fatalf("Archive = %d, %v; want %d", moved, err, old)
	}
	if len(progress) < 3 || progress[len(progress)-1] != old {
		t.Errorf("progress %v: want a report per batch of %d, ending at %d", progress, archiveBatch, old)
	}
	if inRow, archived := rowState(t, s, conv); inRow != newer || archived != old {
		t.Errorf("rows: %d with bodies, %d archived; want %d and %d", inRow, archived, newer, old)
	}
	checkHistory(t, s, conv, old+newer)
	if again, err := s.Archive(t.Context(), archiveCutoff, nil); err != nil || again != 0 {
		t.Errorf("second Archive = %d, %v; want 0", again, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := openAt(t, path, Options{Blobs: blobs})
	checkHistory(t, reopened, conv, old+newer)
	// Without its blob store, a read of an archived message fails rather
	// than return an empty body.
	bare := openAt(t, path, Options{})
	if _, err := bare.Message(t.Context(), conv, 1); err == nil {
		t.Error("Message of an archived body without a blob store succeeded")
	}
	if _, err := bare.Archive(t.Context(), archiveCutoff, nil); err == nil {
		t.Error("Archive without a blob store succeeded")
	}
	if m, err := bare.Message(t.Context(), conv, old+1); err != nil || m.Body == "" {
		t.Errorf("Message of a newer one without a blob store = %+v, %v", m, err)
	}
}

// interruptingBlobs stores objects but stops the run (cancels its context)
// once it has stored `after` of them: a process killed between the blob
// puts and the row update.
type interruptingBlobs struct {
	blob.Store
	after  int32
	puts   atomic.Int32
	cancel context.CancelFunc
}

func (b *interruptingBlobs) Put(ctx context.Context, key string, body []byte) error {
	if err := b.Store.Put(ctx, key, body); err != nil {
		return err
	}
	if b.puts.Add(1) == b.after {
		b.cancel()
	}
	return nil
}

// failingBlobs refuses to store one key.
type failingBlobs struct {
	blob.Store
	key string
}

func (b failingBlobs) Put(ctx context.Context, key string, body []byte) error {
	if key == b.key {
		return errors.New("disk full")
	}
	return b.Store.Put(ctx, key, body)
}

// A run stopped after its blob puts, or failing one of them, leaves the
// rows whole (bodies readable from them); the next run moves them.
func TestArchiveInterruptedLeavesBodiesReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "im.db")
	blobs, err := blob.NewDir(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	const conv, n = "d:alice:bob", 30
	s := openAt(t, path, Options{Blobs: blobs})
	appendMany(t, s, conv, n, archiveOldTS, "m")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	interrupting := &interruptingBlobs{Store: blobs, after: n / 2, cancel: cancel}
	s.blobs = interrupting
	if moved, err := s.Archive(ctx, archiveCutoff, nil); err == nil || moved != 0 {
		t.Fatalf("an interrupted Archive = %d, %v; want 0 and an error", moved, err)
	}
	if puts := interrupting.puts.Load(); puts < n/2 {
		t.Fatalf("the interrupted run put %d bodies, want at least %d", puts, n/2)
	}
	if inRow, archived := rowState(t, s, conv); inRow != n || archived != 0 {
		t.Fatalf("after the interrupted run: %d rows with bodies, %d archived; want all %d whole", inRow, archived, n)
	}
	checkHistory(t, s, conv, n)

	s.blobs = failingBlobs{Store: blobs, key: blob.Key(conv, 7)}
	if moved, err := s.Archive(t.Context(), archiveCutoff, nil); err == nil || moved != 0 {
		t.Fatalf("Archive with a failing put = %d, %v; want 0 and an error", moved, err)
	}
	if inRow, _ := rowState(t, s, conv); inRow != n {
		t.Fatalf("after the failing run: %d rows with bodies, want %d", inRow, n)
	}

	s.blobs = blobs
	if moved, err := s.Archive(t.Context(), archiveCutoff, nil); err != nil || moved != n {
		t.Fatalf("Archive after the interruptions = %d, %v; want %d", moved, err, n)
	}
	checkHistory(t, s, conv, n)
}

// Two runs at once (the server's and the command's) move each message
// once between them, while reads go on.
func TestArchiveConcurrentRuns(t *testing.T) {
	blobs, err := blob.NewDir(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	s := openAt(t, filepath.Join(t.TempDir(), "im.db"), Options{Blobs: blobs})
	const conv, n = "d:alice:bob", archiveBatch + 100
	appendMany(t, s, conv, n, archiveOldTS, "m")
	var total atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			moved, err := s.Archive(t.Context(), archiveCutoff, nil)
			if err != nil {
				t.Errorf("Archive: %v", err)
			}
			total.Add(int64(moved))
		})
	}
	wg.Go(func() {
		msgs, _, err := s.History(t.Context(), conv, store.HistoryQuery{Limit: 100})
		if err != nil || len(msgs) != 100 {
			t.Errorf("History during the runs = %d messages, %v", len(msgs), err)
		}
		for _, m := range msgs {
			if m.Body != "body of "+m.MsgID {
				t.Errorf("during the runs, seq %d: body %q", m.Seq, m.Body)
			}
		}
	})
	wg.Wait()
	if total.Load() != n {
		t.Errorf("two runs moved %d together, want %d", total.Load(), n)
	}
	checkHistory(t, s, conv, n)
}
