package processors

import "strings"

// A spreadsheet opening a CSV file takes a cell that starts with =, +, -, @, a tab or a
// carriage return for a formula (=HYPERLINK(...) is a link that sends what it is given,
// =cmd|... ran programs in some), and crawled text is whatever a site wrote. So string
// values are written the way OWASP's CSV injection advice says: with a leading single
// quote, which spreadsheets show as text and do not display. A string that starts with
// a quote gets one more, so that the rule can be undone without guessing: a reader gets
// the raw value by removing one leading quote from a cell that starts with one
// (rawCSVCell). Values that are not strings (numbers, booleans, lists and objects,
// JSON-encoded) are written as they are: -5 is a number, not a formula, and JSON starts
// with neither sign when it is not one.

// csvCell is the string value v as its CSV cell.
func csvCell(v string) string {
	if v == "" {
		return v
	}
	switch v[0] {
	case '=', '+', '-', '@', '\t', '\r', '\'':
		return "'" + v
	}
	return v
}

// rawCSVCell is the value the cell c of a string was written from (csvCell undone).
func rawCSVCell(c string) string {
	return strings.TrimPrefix(c, "'")
}
