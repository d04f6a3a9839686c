package warc

import (
	"path/filepath"
	"testing"

	"github.com/streamcrawl/streamcrawl/processors/warc/warctest"
)

// The files this package writes are read by warcio (an independent implementation, of
// the npm registry): every record, its type, ID, target URI, date, payload digest, HTTP
// status and payload.
func TestFilesReadByWarcio(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, "x", 3000)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		w.WritePage(page(i))
	}
	w.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	got := warctest.Warcio(t, files...)
	if len(got) != 20 {
		t.Fatalf("warcio read %d records, want 20", len(got))
	}
	for i, r := range got {
		p := page(i / 2)
		req, res := p.Records()
		if i%2 == 0 {
			if r.Type != "request" || r.ID != req.ID() || r.URI != p.URL {
				t.Fatalf("record %d (-want +got):\n-request %s %s\n+%s %s %s", i, req.ID(), p.URL, r.Type, r.ID, r.URI)
			}
			continue
		}
		if r.Type != "response" || r.ID != res.ID() || r.URI != p.URL || r.Status != 200 ||
			r.Digest != Digest(p.Body) || r.Payload != string(p.Body) || r.Date != "2026-01-02T03:04:05Z" {
			t.Fatalf("record %d (-want +got):\n-response %s %s 200 %s %q\n+%s %s %s %d %s %q %s", i, res.ID(), p.URL,
				Digest(p.Body), p.Body, r.Type, r.ID, r.URI, r.Status, r.Digest, r.Payload, r.Date)
		}
	}
}
