package warcs3

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// DefaultEndpoint is the endpoint used when neither Config.Endpoint nor the
// AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL environment variables name one.
const DefaultEndpoint = "https://s3.amazonaws.com"

// Config names a bucket and how to reach it. Empty fields are taken from the usual AWS_*
// environment variables (see FromEnv).
type Config struct {
	// Bucket and Prefix: objects are written as <Prefix>/<file name>. From ParseURL.
	Bucket, Prefix string
	// Endpoint is the server's URL (http://127.0.0.1:9000 for a local MinIO). Default
	// $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, then DefaultEndpoint.
	Endpoint string
	// Region defaults to $AWS_REGION, then $AWS_DEFAULT_REGION (empty: the server's).
	Region string
	// AccessKey, SecretKey and SessionToken default to AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, then to ~/.aws/credentials.
	AccessKey, SecretKey, SessionToken string
	// PathStyle addresses the bucket in the path (http://host/bucket/key), as MinIO-like
	// servers want, instead of in the host name (http://bucket.host/key). Default: the
	// client's choice (virtual host for AWS, path otherwise).
	PathStyle bool
}

// ErrNotS3 is returned by ParseURL for a target that is not an s3:// URL.
var ErrNotS3 = errors.New("warcs3: not an s3:// URL")

// IsURL reports whether target is an s3:// URL.
func IsURL(target string) bool { return strings.HasPrefix(target, "s3://") }

// ParseURL splits s3://bucket/prefix into its bucket and prefix (without slashes at
// either end).
func ParseURL(target string) (bucket, prefix string, err error) {
	if !IsURL(target) {
		return "", "", ErrNotS3
	}
	rest := strings.TrimPrefix(target, "s3://")
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("warcs3: %q names no bucket", target)
	}
	return bucket, strings.Trim(prefix, "/"), nil
}

// FromEnv fills the empty fields of c from the environment.
func (c Config) FromEnv() Config {
	first := func(vals ...string) string {
		for _, v := range vals {
			if v != "" {
				return v
			}
		}
		return ""
	}
	c.Endpoint = first(c.Endpoint, os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL"), DefaultEndpoint)
	c.Region = first(c.Region, os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"))
	return c
}

// client builds the minio client of a Config whose environment defaults are filled.
func (c Config) client() (*minio.Client, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("warcs3: endpoint %q: want http(s)://host[:port]", c.Endpoint)
	}
	var creds *credentials.Credentials
	if c.AccessKey != "" || c.SecretKey != "" {
		creds = credentials.NewStaticV4(c.AccessKey, c.SecretKey, c.SessionToken)
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.EnvMinio{},
		})
	}
	opts := &minio.Options{Creds: creds, Secure: u.Scheme == "https", Region: c.Region}
	if c.PathStyle {
		opts.BucketLookup = minio.BucketLookupPath
	}
	cl, err := minio.New(u.Host, opts)
	if err != nil {
		return nil, fmt.Errorf("warcs3: %w", err)
	}
	return cl, nil
}
