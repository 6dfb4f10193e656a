package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/imcore/im/server"
	"github.com/imcore/im/server/blob"
)

// BlobsDir is the default cold storage of the embedded deployment, in
// the data directory.
const BlobsDir = "blobs"

// blobFlags are the flags naming the cold storage of archived bodies,
// shared by serve and archive.
type blobFlags struct {
	spec, endpoint string
}

// addBlobFlags defines -blob and -s3-endpoint on fs.
func addBlobFlags(fs *flag.FlagSet) *blobFlags {
	f := &blobFlags{}
	fs.StringVar(&f.spec, "blob", "", `cold storage of archived message bodies: a directory, or s3://BUCKET (default DATA/blobs)`)
	fs.StringVar(&f.endpoint, "s3-endpoint", "", "endpoint of an S3-compatible store for -blob s3://BUCKET, addressed path-style (AWS when empty)")
	return f
}

// open opens the store the flags name (DATA/blobs when -blob is empty),
// in region (the AWS chain's when empty).
func (f *blobFlags) open(ctx context.Context, dataDir, region string) (blob.Store, string, error) {
	spec := f.spec
	if spec == "" {
		spec = filepath.Join(dataDir, BlobsDir)
	}
	st, err := blob.Open(ctx, spec, f.endpoint, region)
	if err != nil {
		return nil, "", fmt.Errorf("-blob: %w", err)
	}
	return st, spec, nil
}

// serveArchiving holds serve's flags of cold storage: where archived
// bodies are, and how old a body the server archives itself.
type serveArchiving struct {
	blobs     *blobFlags
	olderThan age
}

// addServeArchiving defines serve's cold-storage flags on fs.
func addServeArchiving(fs *flag.FlagSet, blobs *blobFlags) *serveArchiving {
	a := &serveArchiving{blobs: blobs}
	fs.Var(&a.olderThan, "archive-older-than", `move message bodies older than this (e.g. "90d", "2160h") to -blob once an hour (0: off)`)
	return a
}

// configure sets cfg's cold storage from the flags. Scaled out, the
// backend has opened the blob store -blob names itself (none without it).
func (a *serveArchiving) configure(ctx context.Context, cfg *server.Config, dataDir string, storage *storeFlags) error {
	if a.olderThan < 0 {
		return fmt.Errorf("-archive-older-than cannot be negative")
	}
	if storage.scaledOut() {
		if a.olderThan > 0 && a.blobs.spec == "" {
			return fmt.Errorf("-archive-older-than needs -blob (s3://BUCKET) when scaled out")
		}
		cfg.ArchiveOlderThan = time.Duration(a.olderThan)
		return nil
	}
	blobs, _, err := a.blobs.open(ctx, dataDir, storage.region)
	if err != nil {
		return err
	}
	cfg.Blobs, cfg.ArchiveOlderThan = blobs, time.Duration(a.olderThan)
	return nil
}

// age is a duration flag that also takes whole days: "90d".
type age time.Duration

// String implements flag.Value ("" when zero: no default to show).
func (a *age) String() string {
	if a == nil || *a == 0 {
		return ""
	}
	d := time.Duration(*a)
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// Set implements flag.Value.
func (a *age) Set(s string) error {
	d, err := parseAge(s)
	if err != nil {
		return err
	}
	*a = age(d)
	return nil
}

// parseAge reads "90d" (days) or a Go duration ("2160h", "90m").
func parseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 0 || n > int64(1<<63-1)/int64(24*time.Hour) {
			return 0, fmt.Errorf("%q: want whole days (90d) or a duration (2160h)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want whole days (90d) or a duration (2160h)", s)
	}
	return d, nil
}
