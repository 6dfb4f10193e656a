package blob

import (
	"context"
	"fmt"
	"strings"
)

// Open opens the Store a -blob value names: "s3://BUCKET" is an S3 bucket
// (at endpoint when set, path-style; in region when set), anything else a
// directory path.
func Open(ctx context.Context, spec, endpoint, region string) (Store, error) {
	if spec == "" {
		return nil, fmt.Errorf("blob: no store named (want a directory or s3://BUCKET)")
	}
	if bucket, ok := strings.CutPrefix(spec, "s3://"); ok {
		bucket = strings.TrimSuffix(bucket, "/")
		if bucket == "" || strings.Contains(bucket, "/") {
			return nil, fmt.Errorf("blob: %q: want s3://BUCKET", spec)
		}
		return NewS3(ctx, S3Options{Bucket: bucket, Endpoint: endpoint, Region: region})
	}
	return NewDir(spec)
}
