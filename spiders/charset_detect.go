package spiders

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// detectSample is how much of an undeclared, non-UTF-8 body the detector reads.
const detectSample = 64 << 10

// legacyCandidate is an East Asian encoding an undeclared page may be in, and the test
// its decoded text must pass: the share of its non-ASCII characters that are of the
// script the encoding is used for.
type legacyCandidate struct {
	name  string
	enc   encoding.Encoding
	test  func(r rune) bool
	share float64
}

func isKana(r rune) bool { return r >= 0x3040 && r <= 0x30ff } // hiragana, full-width katakana

func isHangulSyllable(r rune) bool { return r >= 0xac00 && r <= 0xd7a3 }

func isHan(r rune) bool {
	return unicode.Is(unicode.Han, r) || r >= 0x3000 && r <= 0x303f || r >= 0xff01 && r <= 0xff5e
}

// The order matters: kana tells Japanese apart from everything else, Korean text is
// almost all Hangul syllables (Chinese decoded as EUC-KR is not), and GBK and Big5 are
// told apart by which decodes without errors.
var legacyCandidates = []legacyCandidate{
	{"shift_jis", japanese.ShiftJIS, isKana, 0.10},
	{"euc-jp", japanese.EUCJP, isKana, 0.10},
	{"euc-kr", korean.EUCKR, isHangulSyllable, 0.80},
	{"gbk", simplifiedchinese.GBK, isHan, 0.80},
	{"big5", traditionalchinese.Big5, isHan, 0.80},
}

// detectLegacy guesses the encoding of a body that declares none and is not UTF-8:
// an East Asian multi-byte encoding when the body decodes in it without an error and
// reads as its script, else DefaultCharset. Western pages fail every candidate (their
// lone accented bytes are not valid multi-byte sequences).
func detectLegacy(body []byte) (encoding.Encoding, string) {
	sample := body[:min(len(body), detectSample)]
	cut := len(sample) < len(body)
	for _, c := range legacyCandidates {
		text, err := c.enc.NewDecoder().Bytes(sample)
		if err != nil {
			continue
		}
		bad, nonASCII, native := 0, 0, 0
		for i := 0; i < len(text); {
			r, n := utf8.DecodeRune(text[i:])
			i += n
			switch {
			case r == utf8.RuneError:
				if !(cut && i >= len(text)-3) { // a character cut by the sample
					bad++
				}
			case r >= utf8.RuneSelf:
				nonASCII++
				if c.test(r) {
					native++
				}
			}
		}
		if bad == 0 && native >= 2 && float64(native) >= c.share*float64(nonASCII) {
			return c.enc, c.name
		}
	}
	return charmap.Windows1252, DefaultCharset
}
