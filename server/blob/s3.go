package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3Options says which bucket an S3 store uses and where.
type S3Options struct {
	// Bucket is the bucket's name.
	Bucket string
	// Endpoint, when set, is an S3-compatible endpoint (e.g.
	// http://127.0.0.1:9000) addressed path-style; empty means AWS.
	Endpoint string
	// Region is the bucket's region; empty takes the standard chain's
	// (AWS_REGION, the shared config).
	Region string
}

// S3 is a Store on an S3 bucket, one object per key. Credentials come from
// the standard AWS chain (environment, shared files, instance role).
type S3 struct {
	client *s3.Client
	bucket string
	region string
}

var _ Store = (*S3)(nil)

// NewS3 returns a Store on opts.Bucket. It does not contact S3: a missing
// bucket shows at the first Put or Get (see EnsureBucket).
func NewS3(ctx context.Context, opts S3Options) (*S3, error) {
	if opts.Bucket == "" {
		return nil, errors.New("blob: empty S3 bucket name")
	}
	var loads []func(*config.LoadOptions) error
	if opts.Region != "" {
		loads = append(loads, config.WithRegion(opts.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, fmt.Errorf("blob: AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
			o.UsePathStyle = true
			// S3-compatible stores often lack the newer checksum
			// headers and trailers: send and check them only when an
			// operation requires them.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	return &S3{client: client, bucket: opts.Bucket, region: cfg.Region}, nil
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, key string, body []byte) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
	})
	if err != nil {
		return fmt.Errorf("blob: put s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// Get implements Store.
func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("blob: get s3://%s/%s: %w", s.bucket, key, ErrNotFound)
		}
		return nil, fmt.Errorf("blob: get s3://%s/%s: %w", s.bucket, key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("blob: read s3://%s/%s: %w", s.bucket, key, err)
	}
	return body, nil
}

// EnsureBucket creates the bucket unless it exists (and is ours); running
// it again changes nothing.
func (s *S3) EnsureBucket(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)})
	if err == nil {
		return nil
	}
	if !isNotFound(err) {
		return fmt.Errorf("blob: look up bucket %s: %w", s.bucket, err)
	}
	in := &s3.CreateBucketInput{Bucket: aws.String(s.bucket)}
	if s.region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
			LocationConstraint: types.BucketLocationConstraint(s.region),
		}
	}
	_, err = s.client.CreateBucket(ctx, in)
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return fmt.Errorf("blob: create bucket %s: %w", s.bucket, err)
	}
	return nil
}

// isNotFound reports whether err says the key (or bucket) does not exist.
func isNotFound(err error) bool {
	var (
		noKey    *types.NoSuchKey
		notFound *types.NotFound
		noBucket *types.NoSuchBucket
	)
	if errors.As(err, &noKey) || errors.As(err, &notFound) || errors.As(err, &noBucket) {
		return true
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "NoSuchKey", "NotFound", "NoSuchBucket":
			return true
		}
	}
	var httpErr interface{ HTTPStatusCode() int }
	return errors.As(err, &httpErr) && httpErr.HTTPStatusCode() == http.StatusNotFound
}

// Check reports whether the bucket answers (HeadBucket), for health
// reports; it changes nothing.
func (s *S3) Check(ctx context.Context) error {
	if _, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		return fmt.Errorf("blob: bucket %s: %w", s.bucket, err)
	}
	return nil
}

// String names the store: s3://BUCKET.
func (s *S3) String() string { return "s3://" + s.bucket }
