package browser

import (
	"net/http"
	"strings"
)

// DownloadError is returned when the page's document is a download (its answer says
// Content-Disposition: attachment): the browser saves it rather than showing it, and
// downloads are denied, so there is no page to take. The answer is fetched over HTTP
// instead, like any document that is not HTML.
type DownloadError struct {
	// URL is the document's (after redirects).
	URL string
	// Status and Headers are its answer's.
	Status  int
	Headers http.Header
}

// Error says which document is a download.
func (e *DownloadError) Error() string {
	return "browser: " + e.URL + " is a download (" + e.Headers.Get("Content-Disposition") + "), not a page"
}

// download returns the DownloadError of a first document that failed to load because
// it is a download, nil when it is not one.
func (r *pageRun) download() *DownloadError {
	doc := r.tab.net.lastDocument()
	if doc == nil {
		return nil
	}
	h := headersOf(doc.Headers)
	disp := strings.ToLower(strings.TrimSpace(h.Get("Content-Disposition")))
	if !strings.HasPrefix(disp, "attachment") {
		return nil
	}
	return &DownloadError{URL: doc.URL, Status: int(doc.Status), Headers: h}
}
