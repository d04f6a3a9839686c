package sitekit

import (
	"net/http"
	"strings"
	"testing"
)

// TestPageAnswers: Error, Robots and PageLink write the bytes both test sites served
// before they shared them.
func TestPageAnswers(t *testing.T) {
	t.Parallel()
	p := &Page{}
	body, code, ctype := p.Error(http.StatusNotFound, "Front page")
	want := "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>404 Not Found</title></head>\n" +
		"<body><h1>404 Not Found</h1><p><a href=\"/\">Front page</a></p></body></html>\n"
	if string(body) != want || code != http.StatusNotFound || ctype != HTMLType {
		t.Fatalf("Error = %q %d %q, want %q 404 %q", body, code, ctype, want, HTMLType)
	}
	p = &Page{}
	if _, code, _ := p.Error(http.StatusInternalServerError, "x"); code != 500 || !strings.Contains(string(p.B), "<h1>500 Internal Server Error</h1>") {
		t.Fatalf("Error(500) = %d %q", code, p.B)
	}
	p = &Page{}
	body, code, ctype = p.Robots("/private/")
	if string(body) != "User-agent: *\nDisallow: /private/\n" || code != http.StatusOK || ctype != TextType {
		t.Fatalf("Robots = %q %d %q", body, code, ctype)
	}
	p = &Page{}
	p.PageLink("/c/lamps", 1, "First")
	p.PageLink("/c/lamps", 3, "3")
	if want := "<li><a href=\"/c/lamps\">First</a></li>\n<li><a href=\"/c/lamps?page=3\">3</a></li>\n"; string(p.B) != want {
		t.Fatalf("PageLink wrote %q, want %q", p.B, want)
	}
}
