package cli

import (
	"io"
	"sync"
)

// termWriter is stderr on a terminal shared by log lines and one status line at the
// bottom (the progress line of crawl and demo): a log line first clears the status line,
// which is redrawn at its next refresh, so the two never share a row.
type termWriter struct {
	mu     sync.Mutex
	w      io.Writer
	status bool // a status line is on screen
}

// Write writes log output below a cleared status line.
func (t *termWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status {
		t.status = false
		if _, err := io.WriteString(t.w, "\r\x1b[2K"); err != nil {
			return 0, err
		}
	}
	return t.w.Write(p)
}

// Status replaces the status line with line ("" clears it).
func (t *termWriter) Status(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = io.WriteString(t.w, "\r\x1b[2K"+line)
	t.status = line != ""
}
