package blob_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/imcore/im/internal/testservices"
	"github.com/imcore/im/server/blob"
)

// storeContract checks what every Store promises.
func storeContract(t *testing.T, s blob.Store) {
	ctx := t.Context()
	key := blob.Key("d:alice:bob", 42)
	if _, err := s.Get(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Get before Put: %v, want ErrNotFound", err)
	}
	body := []byte("hey \x00 ünïcode")
	if err := s.Put(ctx, key, body); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if got, err := s.Get(ctx, key); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("Get = %q, %v; want %q", got, err, body)
	}
	// A second Put of the same key is harmless.
	if err := s.Put(ctx, key, body); err != nil {
		t.Fatalf("Put again: %v", err)
	}
	if got, err := s.Get(ctx, key); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("Get after the second Put = %q, %v", got, err)
	}
	// An empty body is an object, not a missing one.
	empty := blob.Key("d:alice:bob", 43)
	if err := s.Put(ctx, empty, nil); err != nil {
		t.Fatalf("Put empty: %v", err)
	}
	if got, err := s.Get(ctx, empty); err != nil || len(got) != 0 {
		t.Fatalf("Get empty = %q, %v", got, err)
	}
	// Keys of other conversations (odd characters included) do not collide.
	other := blob.Key("g:../../etc", 42)
	if _, err := s.Get(ctx, other); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Get of another conversation's key: %v, want ErrNotFound", err)
	}
	if err := s.Put(ctx, other, []byte("other")); err != nil {
		t.Fatalf("Put %s: %v", other, err)
	}
	if got, _ := s.Get(ctx, key); !bytes.Equal(got, body) {
		t.Fatalf("after another conversation's Put: %q", got)
	}
	// Concurrent Puts and Gets.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			k := blob.Key("g:many", int64(i))
			if err := s.Put(ctx, k, []byte(k)); err != nil {
				t.Errorf("Put %s: %v", k, err)
				return
			}
			if got, err := s.Get(ctx, k); err != nil || string(got) != k {
				t.Errorf("Get %s = %q, %v", k, got, err)
			}
		})
	}
	wg.Wait()
}

func TestBlobDir(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	d, err := blob.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("NewDir created %s before any Put: %v", root, err)
	}
	storeContract(t, d)
	// Every file and directory stays under the root, private, and no
	// temporary file is left behind.
	err = filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(info.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", path)
		}
		want := os.FileMode(0o600)
		if info.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "etc")); !os.IsNotExist(err) {
		t.Errorf("a key with .. wrote outside the root: %v", err)
	}
	// A new handle on the same directory reads what the first wrote.
	again, err := blob.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := again.Get(t.Context(), blob.Key("d:alice:bob", 42)); err != nil || len(got) == 0 {
		t.Errorf("reopened Get = %q, %v", got, err)
	}
}

func TestBlobS3(t *testing.T) {
	endpoint := testservices.S3(t)
	s, err := blob.NewS3(t.Context(), blob.S3Options{Bucket: bucketName(t), Endpoint: endpoint, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureBucket(t.Context()); err != nil {
		t.Fatalf("EnsureBucket: %v", err)
	}
	if err := s.EnsureBucket(t.Context()); err != nil {
		t.Fatalf("EnsureBucket again: %v", err)
	}
	storeContract(t, s)
}

func TestBlobS3MissingBucket(t *testing.T) {
	endpoint := testservices.S3(t)
	s, err := blob.NewS3(t.Context(), blob.S3Options{Bucket: bucketName(t), Endpoint: endpoint, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "k", []byte("x")); err == nil {
		t.Fatal("Put into a bucket never created succeeded")
	}
}

func TestBlobOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	s, err := blob.Open(t.Context(), dir, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*blob.Dir); !ok {
		t.Errorf("Open(%q) = %T, want *blob.Dir", dir, s)
	}
	s, err = blob.Open(t.Context(), "s3://my-bucket", "http://127.0.0.1:1", "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*blob.S3); !ok {
		t.Errorf("Open(s3://my-bucket) = %T, want *blob.S3", s)
	}
	for _, bad := range []string{"", "s3://", "s3://bucket/path"} {
		if _, err := blob.Open(t.Context(), bad, "", "us-east-1"); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
}

// bucketName is a bucket no other test uses: lower case, valid for S3.
func bucketName(t *testing.T) string {
	return testservices.Prefix(t) + "blobs"
}
