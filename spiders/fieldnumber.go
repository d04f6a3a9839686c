package spiders

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Numbers and prices as pages show them: "1.299,00 €", "$1,299.00", "CHF 1'299.–",
// "1 299,00 zł", "4.5 out of 5". Shops write thousands and decimals both ways, so the
// separators are read from the number itself:
//
//   - both '.' and ',' in it: the last separator is the decimal point ("1.299,00",
//     "1,299.00");
//   - one of them, several times: thousands ("1,299,000");
//   - one of them, once: thousands when exactly three digits follow and one to three
//     digits, not all 0, come before ("1.299", "1,299"), else the decimal point ("12,5",
//     "0.125", "1299.00", "1299.000");
//   - spaces (also no-break and thin) and apostrophes are thousands separators when
//     three digits follow; a '.' or ',' after them is the decimal point ("1 299,00").
//
// So "1.299" is 1299, as a German shop means it; an English page meaning 1.299 is
// misread. Values from JSON-LD and microdata are machine-readable, with '.' as the
// decimal point (schema.org says so): a plain number there ("1.299") is read as Go
// reads it (parseMachineNumber).

// parseNumber returns the first number in s, false when s has none (or it does not
// fit a float64). A '-' or '−' right before the digits makes it negative unless it
// follows a letter or digit ("SKU-00017" is 17).
func parseNumber(s string) (float64, bool) {
	start := strings.IndexFunc(s, isASCIIDigit)
	if start < 0 {
		return 0, false
	}
	var b strings.Builder
	b.Grow(len(s) - start + 2)
	if r, n := utf8.DecodeLastRuneInString(s[:start]); r == '.' {
		// ".99": a decimal point with no digit before it.
		if p, _ := utf8.DecodeLastRuneInString(s[:start-n]); !isASCIIDigit(p) && !unicode.IsLetter(p) {
			if negativeBefore(s[:start-n]) {
				b.WriteByte('-')
			}
			b.WriteString("0.")
			for i := start; i < len(s) && isASCIIDigit(rune(s[i])); i++ {
				b.WriteByte(s[i])
			}
			return parseFloatFinite(b.String())
		}
	} else if negativeBefore(s[:start]) {
		b.WriteByte('-')
	}

	// The digits, in groups, with the separator before each group after the first.
	var groups []numGroup
	i := start
	var sep rune
	for {
		j := i
		for j < len(s) && isASCIIDigit(rune(s[j])) {
			j++
		}
		groups = append(groups, numGroup{sep, s[i:j]})
		if j == len(s) {
			break
		}
		r, n := utf8.DecodeRuneInString(s[j:])
		if !isNumberSep(r) {
			break
		}
		k := j + n
		d := k
		for d < len(s) && isASCIIDigit(rune(s[d])) {
			d++
		}
		if d == k {
			break // no digit after the separator: the number ended
		}
		if r != '.' && r != ',' && d-k != 3 {
			break // a space or an apostrophe separates thousands only
		}
		sep, i = r, k
	}

	// Which group the decimal point comes before, if any (0: none).
	point := 0
	lastDot, lastComma, dots, commas, thinBefore := 0, 0, 0, 0, false
	for gi, g := range groups {
		switch g.sep {
		case '.':
			dots++
			lastDot = gi
		case ',':
			commas++
			lastComma = gi
		case 0:
		default:
			thinBefore = thinBefore || dots+commas == 0
		}
	}
	switch {
	case dots > 0 && commas > 0:
		point = max(lastDot, lastComma)
	case dots == 1 || commas == 1:
		last := max(lastDot, lastComma)
		first := groups[0].digits
		if thinBefore || len(groups[last].digits) != 3 || last == 1 && (strings.Trim(first, "0") == "" || len(first) > 3) {
			point = last
		}
	}
	for gi, g := range groups {
		if gi > 0 && gi == point {
			b.WriteByte('.')
		}
		b.WriteString(g.digits)
	}
	return parseFloatFinite(b.String())
}

// numGroup is a run of digits of a number and the separator before it (0 for the first).
type numGroup struct {
	sep    rune
	digits string
}

// negativeBefore reports whether the text before a number ends in a minus sign that
// is not a hyphen inside a word or code.
func negativeBefore(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	if r != '-' && r != '−' {
		return false
	}
	p, _ := utf8.DecodeLastRuneInString(s[:len(s)-n])
	return p == utf8.RuneError || !(unicode.IsLetter(p) || unicode.IsDigit(p))
}

func isASCIIDigit(r rune) bool { return r >= '0' && r <= '9' }

// isNumberSep reports the separators a number may hold between its digits.
func isNumberSep(r rune) bool {
	switch r {
	case '.', ',', '\'', '’', ' ', '\u00a0', '\u202f', '\u2009':
		return true
	}
	return false
}

// parseFloatFinite parses a number made of digits, an optional '-' and '.'.
func parseFloatFinite(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// machineNumberRE is a number as JSON and schema.org write it.
var machineNumberRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// parseMachineNumber reads s as a machine-readable number when it is one (trimmed),
// else as parseNumber does.
func parseMachineNumber(s string) (float64, bool) {
	if t := strings.TrimSpace(s); machineNumberRE.MatchString(t) {
		return parseFloatFinite(t)
	}
	return parseNumber(s)
}

// parseInt returns the first number in s when it is whole and fits an int64.
func parseInt(s string, machine bool) (int64, bool) {
	f, ok := parseNumber(s)
	if machine {
		f, ok = parseMachineNumber(s)
	}
	if !ok {
		return 0, false
	}
	return wholeInt(f)
}

// wholeInt returns f as an int64 when it is whole and below 2^53 in size (where every
// integer is exact in a float64, as a JSON number is read back).
func wholeInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// Currencies: the ISO 4217 code a price names, or its symbol. A code written in the
// text wins; then the symbols that name one currency; a symbol that names several ($,
// ¥, kr) is kept as written.
var (
	currencyCodes = strings.Fields(`AED ARS AUD BGN BRL CAD CHF CLP CNY COP CZK DKK EGP EUR
		GBP HKD HUF IDR ILS INR ISK JPY KES KRW KWD MXN MYR NGN NOK NZD PEN PHP PLN QAR RON
		RUB SAR SEK SGD THB TRY TWD UAH USD VND ZAR`)
	currencyCodeRE = regexp.MustCompile(`(?:^|[^A-Za-z])(` + strings.Join(currencyCodes, "|") + `)(?:$|[^A-Za-z])`)
	// currencySymbols are tried in order: longer ones first ("US$" before "$").
	currencySymbols = [][2]string{
		{"US$", "USD"}, {"CA$", "CAD"}, {"C$", "CAD"}, {"AU$", "AUD"}, {"A$", "AUD"},
		{"NZ$", "NZD"}, {"HK$", "HKD"}, {"S$", "SGD"}, {"R$", "BRL"}, {"€", "EUR"},
		{"£", "GBP"}, {"₹", "INR"}, {"₩", "KRW"}, {"₽", "RUB"}, {"₺", "TRY"}, {"₴", "UAH"},
		{"₪", "ILS"}, {"₫", "VND"}, {"฿", "THB"}, {"zł", "PLN"}, {"Kč", "CZK"}, {"Fr.", "CHF"},
		{"$", "$"}, {"¥", "¥"}, {"kr", "kr"},
	}
)

// parseCurrency returns the currency of a price in s: an ISO 4217 code, or the
// symbol as written for the symbols several currencies use; false when s names none.
func parseCurrency(s string) (string, bool) {
	if m := currencyCodeRE.FindStringSubmatch(s); m != nil {
		return m[1], true
	}
	for _, sym := range currencySymbols {
		if containsSymbol(s, sym[0]) {
			return sym[1], true
		}
	}
	return "", false
}

// containsSymbol reports whether s holds sym, not as part of a word when sym starts
// with a letter ("kr" in "8 kr", not in "Ukraine").
func containsSymbol(s, sym string) bool {
	first, _ := utf8.DecodeRuneInString(sym)
	if !unicode.IsLetter(first) {
		return strings.Contains(s, sym)
	}
	for off := 0; ; {
		i := strings.Index(s[off:], sym)
		if i < 0 {
			return false
		}
		i += off
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(sym):])
		if !unicode.IsLetter(before) && !unicode.IsLetter(after) {
			return true
		}
		off = i + len(sym)
	}
}
