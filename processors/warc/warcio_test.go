package warc

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// warcioScript reads WARC files with the warcio package of the npm registry (an
// independent implementation) and prints one JSON line per record.
const warcioScript = `
import { WARCParser } from 'WARCIO';
import fs from 'node:fs';
for (const file of process.argv.slice(1)) {
  const parser = new WARCParser(fs.createReadStream(file));
  for await (const record of parser) {
    const payload = await record.readFully(true);
    console.log(JSON.stringify({
      type: record.warcType, id: record.warcHeader('WARC-Record-ID'), uri: record.warcTargetURI,
      date: record.warcDate, digest: record.warcHeader('WARC-Payload-Digest'),
      status: record.httpHeaders ? Number(record.httpHeaders.statusCode || 0) : 0,
      payload: Buffer.from(payload).toString('utf8'),
    }));
  }
}
`

// warcio returns the path of the warcio module (npm install -g warcio; .ci/run does).
func warcio(t *testing.T) (node, module string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found (apt-get install nodejs npm; .ci/run installs it): %v", err)
	}
	out, err := exec.Command("npm", "root", "-g").Output()
	if err != nil {
		t.Fatalf("npm root -g: %v", err)
	}
	module = filepath.Join(strings.TrimSpace(string(out)), "warcio", "dist", "index.js")
	if _, err := os.Stat(module); err != nil {
		t.Fatalf("warcio not installed (npm install -g warcio; .ci/run installs it): %v", err)
	}
	return node, module
}

// The files this package writes are read by warcio: every record, its type, ID, target
// URI, date, payload digest, HTTP status and payload.
func TestFilesReadByWarcio(t *testing.T) {
	node, module := warcio(t)
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
	script := strings.Replace(warcioScript, "WARCIO", module, 1)
	cmd := exec.Command(node, append([]string{"--input-type=module", "-e", script}, files...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("warcio: %v\n%s", err, out)
	}
	type rec struct {
		Type, ID, URI, Date, Digest, Payload string
		Status                               int
	}
	var got []rec
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r rec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("warcio output %q: %v", sc.Text(), err)
		}
		got = append(got, r)
	}
	if len(got) != 20 {
		t.Fatalf("warcio read %d records, want 20:\n%s", len(got), out)
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
