// Package warctest reads WARC files with an independent implementation, for tests.
package warctest

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// warcioScript reads WARC files with the warcio package of the npm registry and prints
// one JSON line per record.
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

// Record is a record as warcio read it.
type Record struct {
	// Type, ID, URI, Date and Digest are its WARC-Type, WARC-Record-ID,
	// WARC-Target-URI, WARC-Date and WARC-Payload-Digest; Payload is its HTTP payload.
	Type, ID, URI, Date, Digest, Payload string
	// Status is the HTTP status of a response record (0 for others).
	Status int
}

// Warcio reads files with warcio (node and `npm install -g warcio`; .ci/run installs
// them) and returns their records in order. It fails the test if warcio is missing or
// refuses a file.
func Warcio(t testing.TB, files ...string) []Record {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found (apt-get install nodejs npm; .ci/run installs it): %v", err)
	}
	root, err := exec.Command("npm", "root", "-g").Output()
	if err != nil {
		t.Fatalf("npm root -g: %v", err)
	}
	module := filepath.Join(strings.TrimSpace(string(root)), "warcio", "dist", "index.js")
	if _, err := os.Stat(module); err != nil {
		t.Fatalf("warcio not installed (npm install -g warcio; .ci/run installs it): %v", err)
	}
	script := strings.Replace(warcioScript, "WARCIO", module, 1)
	out, err := exec.Command(node, append([]string{"--input-type=module", "-e", script}, files...)...).Output()
	if err != nil {
		t.Fatalf("warcio: %v\n%s", err, out)
	}
	var recs []Record
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("warcio output %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}
