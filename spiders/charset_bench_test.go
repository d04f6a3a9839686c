package spiders

import (
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"
)

// A 20 KB page, the size the README's parse figures use.
var charsetPage = "<!doctype html><html><head><title>t</title></head><body>" +
	strings.Repeat(`<div class="p"><a href="/p/1">Café résumé naïve</a><span>12,50 €</span></div>`, 250) + "</body></html>"

func BenchmarkDecodeTextUTF8(b *testing.B) {
	body := []byte(charsetPage)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := DecodeText(body, "text/html; charset=utf-8"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeTextUndeclaredUTF8(b *testing.B) {
	body := []byte(charsetPage)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := DecodeText(body, "text/html"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeTextWindows1252(b *testing.B) {
	body, _ := charmap.Windows1252.NewEncoder().Bytes([]byte(charsetPage))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := DecodeText(body, "text/html; charset=windows-1252"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseHTML10000Deep(b *testing.B) {
	body := []byte("<html><body>" + strings.Repeat("<div>", 10000) + "<h1>x</h1></body></html>")
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := ParseHTML(body); err != nil {
			b.Fatal(err)
		}
	}
}
