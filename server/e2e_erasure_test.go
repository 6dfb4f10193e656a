package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/imcore/im/internal/testservices"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/servertest"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/dynamostore"
)

// erasable is a conversation's messages made to be deleted: one archived
// before its deletion, one still in the log, each edited; their texts are
// what must be found nowhere afterwards.
type erasable struct {
	conv    string
	targets []protocol.Message
	edits   []protocol.Message
	texts   []string
}

// writeErasable has alice send and edit two messages to bob, the first
// archived (archive moves every body so far) before the second is sent.
func writeErasable(t *testing.T, alice *servertest.Client, archive func()) erasable {
	t.Helper()
	x := erasable{conv: servertest.Direct("alice", "bob")}
	for i, when := range []string{"cold", "hot"} {
		original, edited := fmt.Sprintf("%s-original-Zq%d", when, i), fmt.Sprintf("%s-edited-Zq%d", when, i)
		// Long bodies: a row that shrinks leaves most of its old bytes
		// in the page's free space, which only secure_delete zeroes.
		m := alice.SendMsg(x.conv, strings.Repeat(original+" ", 100))
		e := alice.Relate(x.conv, protocol.KindEdit, m.Seq, strings.Repeat(edited+" ", 100))
		x.targets, x.edits, x.texts = append(x.targets, m), append(x.edits, e), append(x.texts, original, edited)
		if i == 0 {
			archive()
		}
	}
	return x
}

// deleteAll deletes x's targets and checks that history shows them
// deleted and their edits erased.
func (x erasable) deleteAll(t *testing.T, alice *servertest.Client) {
	t.Helper()
	for i, m := range x.targets {
		alice.Relate(x.conv, protocol.KindDelete, m.Seq, "")
		if got := alice.MessageAt(x.conv, m.Seq); !got.Deleted || got.Body != "" {
			t.Fatalf("deleted %d shows %s", m.Seq, servertest.JSON(got))
		}
		if got := alice.MessageAt(x.conv, x.edits[i].Seq); got.Body != "" {
			t.Fatalf("edit %d of a deleted message shows %s", x.edits[i].Seq, servertest.JSON(got))
		}
	}
}

// wantNone fails if data holds any of texts.
func wantNone(t *testing.T, where string, data []byte, texts []string) {
	t.Helper()
	for _, text := range texts {
		if bytes.Contains(data, []byte(text)) {
			t.Fatalf("%s still holds %q", where, text)
		}
	}
}

// wantNoneInDir fails if any file under dir holds any of texts.
func wantNoneInDir(t *testing.T, dir string, texts []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		wantNone(t, path, data, texts)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeletionErasesSQLiteAndBlobDir: after a deletion for everyone, the
// texts of the message and of its edits are in no byte of the SQLite
// files (checkpointed), nor in any file of the blob directory the older
// one was archived to.
func TestDeletionErasesSQLiteAndBlobDir(t *testing.T) {
	blobDir := t.TempDir()
	blobs, err := blob.NewDir(blobDir)
	if err != nil {
		t.Fatal(err)
	}
	env := servertest.Start(t, servertest.OnSQLite, func(c *server.Config) { c.Blobs = blobs })
	alice := env.Dial(t, "alice", "a")
	x := writeErasable(t, alice, func() {
		ar := env.Server.Backend().(store.Archiver)
		if moved, err := ar.Archive(t.Context(), time.Now().Add(time.Hour).UnixMilli(), nil); err != nil || moved == 0 {
			t.Fatalf("archive: moved %d, %v", moved, err)
		}
	})
	// Archived, the cold text is in the blob directory now: the check
	// below can fail.
	var before bytes.Buffer
	filepath.WalkDir(blobDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(path)
			before.Write(data)
		}
		return nil
	})
	if !strings.Contains(before.String(), x.texts[0]) {
		t.Fatalf("the blob directory does not hold %q before the deletion: the test proves nothing", x.texts[0])
	}

	x.deleteAll(t, alice)
	alice.Close()
	env.Stop()
	db, err := sql.Open("sqlite", filepath.Join(env.Config.DataDir, "im.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	wantNoneInDir(t, env.Config.DataDir, x.texts)
	wantNoneInDir(t, blobDir, x.texts)
}

// TestDeletionErasesDynamoDBAndS3: on the scaled-out deployment, after a
// deletion for everyone the texts of the message and of its edits are in
// no item of any table (a scan of each), nor in S3, where the older one
// was archived.
func TestDeletionErasesDynamoDBAndS3(t *testing.T) {
	servertest.OncePerSuite(t)
	so := servertest.ScaledOut(t)
	so.Blob = "s3://" + strings.TrimSuffix(testservices.Prefix(t), "-") + "-bodies"
	so.S3Endpoint = testservices.S3(t)
	ctx, cancel := context.WithTimeout(context.Background(), servertest.Timeout)
	defer cancel()
	if _, err := so.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	be, cluster, err := server.OpenScaledOut(ctx, so, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := servertest.Start(t, func(c *server.Config) { c.Backend, c.Cluster = be, cluster })
	alice := node.DialReplayed(t, "alice", "a")
	tables, closeTables, err := so.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTables()
	x := writeErasable(t, alice, func() {
		if moved, err := tables.Archive(ctx, time.Now().Add(time.Hour).UnixMilli(), nil); err != nil || moved == 0 {
			t.Fatalf("archive: moved %d, %v", moved, err)
		}
	})
	blobs, err := so.OpenBlobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if body, err := blobs.Get(ctx, blob.Key(x.conv, x.targets[0].Seq)); err != nil || !strings.Contains(string(body), x.texts[0]) {
		t.Fatalf("S3 holds %q, %v before the deletion, want %q: the test proves nothing", body, err, x.texts[0])
	}

	x.deleteAll(t, alice)
	db, err := dynamostore.NewClient(ctx, so.DynamoDBEndpoint, so.Region)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range dynamostore.TableNames(so.TablePrefix) {
		in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
		for {
			page, err := db.Scan(ctx, in)
			if err != nil {
				t.Fatalf("scan %s: %v", table, err)
			}
			for _, it := range page.Items {
				wantNone(t, "table "+table, []byte(itemText(it)), x.texts)
			}
			if page.LastEvaluatedKey == nil {
				break
			}
			in.ExclusiveStartKey = page.LastEvaluatedKey
		}
	}
	for _, m := range append(append([]protocol.Message{}, x.targets...), x.edits...) {
		body, err := blobs.Get(ctx, blob.Key(x.conv, m.Seq))
		if err != nil && !errors.Is(err, blob.ErrNotFound) {
			t.Fatal(err)
		}
		wantNone(t, "S3 object "+blob.Key(x.conv, m.Seq), body, x.texts)
	}
}

// itemText is every string an item holds, at any depth.
func itemText(it map[string]types.AttributeValue) string {
	var b strings.Builder
	var walk func(v types.AttributeValue)
	walk = func(v types.AttributeValue) {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			b.WriteString(v.Value + "\n")
		case *types.AttributeValueMemberSS:
			b.WriteString(strings.Join(v.Value, "\n"))
		case *types.AttributeValueMemberB:
			b.Write(v.Value)
		case *types.AttributeValueMemberM:
			for k, x := range v.Value {
				b.WriteString(k + "\n")
				walk(x)
			}
		case *types.AttributeValueMemberL:
			for _, x := range v.Value {
				walk(x)
			}
		}
	}
	for k, v := range it {
		b.WriteString(k + "\n")
		walk(v)
	}
	return b.String()
}
