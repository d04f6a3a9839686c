package spiders

import (
	"bytes"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

func TestDecodeTextFollowsTheBrowserOrder(t *testing.T) {
	utf8Late := "<html><body><!--" + strings.Repeat("x", 2000) + "-->naïve</body></html>"
	for _, c := range []struct {
		name, ctype string
		body        []byte
		want, cs    string
	}{
		{"header latin1", "text/html; charset=iso-8859-1", []byte("<p>caf\xe9</p>"), "<p>café</p>", "windows-1252"},
		{"bom beats header", "text/html; charset=iso-8859-1", []byte("\xef\xbb\xbf<p>café</p>"), "<p>café</p>", "utf-8"},
		{"utf-16le bom", "text/html", []byte("\xff\xfe<\x00p\x00>\x00\xe9\x00"), "<p>é", "utf-16le"},
		{"header beats meta", "text/html; charset=utf-8", []byte(`<meta charset="shift_jis"><p>café</p>`), `<meta charset="shift_jis"><p>café</p>`, "utf-8"},
		{"meta charset", "text/html", []byte("<meta charset=\"Shift_JIS\"><p>\x93\xfa\x96\x7b</p>"), "<meta charset=\"Shift_JIS\"><p>日本</p>", "shift_jis"},
		{"meta http-equiv", "", []byte("<html><head><meta http-equiv=\"content-type\" content=\"text/html; charset=euc-kr\"></head>\xc7\xd1"), "<html><head><meta http-equiv=\"content-type\" content=\"text/html; charset=euc-kr\"></head>한", "euc-kr"},
		{"meta after the first KB is not read", "text/html", []byte(strings.Repeat(" ", 1100) + "<meta charset=\"gbk\">caf\xe9"), strings.Repeat(" ", 1100) + "<meta charset=\"gbk\">café", "windows-1252"},
		{"undeclared utf-8 past the first KB", "text/html", []byte(utf8Late), utf8Late, "utf-8"},
		{"undeclared legacy", "text/html", []byte("d\xe9j\xe0"), "déjà", "windows-1252"},
		{"utf-8 cut mid-rune stays utf-8", "text/html", []byte("caf\xc3\xa9 caf\xc3"), "café caf\ufffd", "utf-8"},
		{"json untouched", "application/json", []byte("{\"a\":\"\xe9\"}"), "{\"a\":\"\xe9\"}", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, cs, err := DecodeText(c.body, c.ctype)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want || cs != c.cs {
				t.Errorf("DecodeText (-want +got):\n-%q %s\n+%q %s", c.want, c.cs, got, cs)
			}
		})
	}
}

func TestParseHTMLSurvivesDeepNesting(t *testing.T) {
	for _, depth := range []int{511, 600, 10000, 100000} {
		body := "<html><body><nav><a href=\"/top\">top</a></nav>" + strings.Repeat("<div><span>", depth/2) +
			`<h1 class="name">deep</h1><a href="/inner">inner</a><img src="/i.png">` + "</body></html>"
		root, err := ParseHTML([]byte(body))
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		doc := goquery.NewDocumentFromNode(root)
		if got := doc.Find("h1.name").Text(); got != "deep" {
			t.Errorf("depth %d: h1.name = %q, want deep", depth, got)
		}
		var links []string
		doc.Find("a[href]").Each(func(_ int, s *goquery.Selection) { links = append(links, s.AttrOr("href", "")) })
		if strings.Join(links, " ") != "/top /inner" || doc.Find("img").Length() != 1 {
			t.Errorf("depth %d: links %v, img %d; want /top /inner and one img", depth, links, doc.Find("img").Length())
		}
	}
}

func TestFlattenLeavesShallowDocumentsAlone(t *testing.T) {
	body := []byte(`<html><body><div><p>a<br>b</p><ul><li>x</li></ul></div><script>if (a<b) {}</script></body></html>`)
	if got := flatten(body, 3, 3); !bytes.Equal(got, body) {
		t.Errorf("flatten changed a 4-deep document:\n-%s\n+%s", body, got)
	}
}

func TestLooksBinary(t *testing.T) {
	for body, want := range map[string]bool{
		"\x89PNG\r\n\x1a\n\x00\x00": true, "PK\x03\x04\x00\x00": true, "%PDF-1.4\n\x00\x01": true,
		"<html>caf\xe9</html>": false, "plain words": false, "": false,
	} {
		if got := LooksBinary([]byte(body)); got != want {
			t.Errorf("LooksBinary(%q) = %v, want %v", body, got, want)
		}
	}
}

func TestUndeclaredLegacyEncodingsAreDetected(t *testing.T) {
	for _, c := range []struct{ text, enc string }{
		{"これは日本語のページです。ひらがなとカタカナ。", "shift_jis"},
		{"これは日本語のページです。ひらがなとカタカナ。", "euc-jp"},
		{"이것은 한국어 페이지입니다. 안녕하세요.", "euc-kr"},
		{"这是一个中文网页，欢迎访问我们的网站。", "gbk"},
		{"這是一個中文網頁，歡迎訪問我們的網站。", "big5"},
		{"café résumé naïve déjà vu, Größe, señor", "windows-1252"},
		{"“Smart” quotes – 5 € – œuvre", "windows-1252"},
	} {
		e, _ := lookupCharset(c.enc)
		body, err := e.NewEncoder().Bytes([]byte("<html><body><p>" + c.text + "</p></body></html>"))
		if err != nil {
			t.Fatalf("%s: %v", c.enc, err)
		}
		got, cs, err := DecodeText(body, "text/html")
		if err != nil {
			t.Fatal(err)
		}
		if cs != c.enc || !strings.Contains(string(got), c.text) {
			t.Errorf("undeclared %s read as %s: %q", c.enc, cs, got)
		}
	}
}
