// Package warcs3test serves the S3 HTTP API on loopback for tests, in process
// (github.com/johannesboyne/gofakes3, objects in memory).
package warcs3test

import (
	"net/http/httptest"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/streamcrawl/streamcrawl/processors/warcs3"
)

// Server is an S3-compatible server on a loopback port.
type Server struct {
	// URL is the endpoint (http://127.0.0.1:port).
	URL string
	// Bucket exists, empty at start.
	Bucket string

	close func()
}

// Close stops the server (an outage); Start's cleanup closes it otherwise.
func (s *Server) Close() { s.close() }

// Start serves an S3 API holding one empty bucket until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	backend := s3mem.New()
	const bucket = "crawl-archive"
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(ts.Close)
	return &Server{URL: ts.URL, Bucket: bucket, close: ts.Close}
}

// Config returns the Config of a prefix in the bucket, with test credentials.
func (s *Server) Config(prefix string) warcs3.Config {
	return warcs3.Config{Bucket: s.Bucket, Prefix: prefix, Endpoint: s.URL, Region: "us-east-1",
		AccessKey: "test", SecretKey: "testsecret", PathStyle: true}
}

// Env returns the environment variables that give a child process the server's
// credentials and region the usual way (AWS_*).
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=testsecret", "AWS_REGION=us-east-1"}
}
