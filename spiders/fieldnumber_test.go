package spiders

import (
	"strings"
	"testing"
)

func TestParseNumber(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1.299,00 €", 1299, true},
		{"$1,299.00", 1299, true},
		{"1 299,00 zł", 1299, true},
		{"1\u00a0299,00\u00a0€", 1299, true},
		{"1\u202f234\u202f567,5", 1234567.5, true},
		{"CHF 1'299.–", 1299, true},
		{"12,5", 12.5, true},
		{"0,125", 0.125, true},
		{"1299.00", 1299, true},
		{"1299.000", 1299, true},
		{"1.299", 1299, true},
		{"1,299", 1299, true},
		{"1,299,000", 1299000, true},
		{"1.234.567,89", 1234567.89, true},
		{"1,234,567.89", 1234567.89, true},
		{"1,2345", 1.2345, true},
		{"12.50 €", 12.5, true},
		{"4.5 out of 5", 4.5, true},
		{"Width 45 cm", 45, true},
		{"12 pieces for 300", 12, true},
		{"SKU-00017", 17, true},
		{"-12,50 €", -12.5, true},
		{"€ -5", -5, true},
		{"Save 20-30", 20, true},
		{"$.99", 0.99, true},
		{"v.2", 2, true},
		{"Free", 0, false},
		{"", 0, false},
		{strings.Repeat("9", 400), 0, false},
	}
	for _, tt := range tests {
		got, ok := parseNumber(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseNumber(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseMachineNumber(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{"1.299", 1.299}, // schema.org: '.' is the decimal point
		{" 1299.00 ", 1299},
		{"-0.5", -0.5},
		{"1e3", 1000},
		{"1.299,00 €", 1299}, // not a plain number: read as a page shows it
	}
	for _, tt := range tests {
		if got, ok := parseMachineNumber(tt.in); !ok || got != tt.want {
			t.Errorf("parseMachineNumber(%q) = %v, %v; want %v", tt.in, got, ok, tt.want)
		}
	}
}

func TestParseInt(t *testing.T) {
	tests := []struct {
		in      string
		machine bool
		want    int64
		ok      bool
	}{
		{"SKU-00017", false, 17, true},
		{"1,299 reviews", false, 1299, true},
		{"4.5", false, 0, false},
		{"1.299", true, 0, false},
		{"9007199254740993", false, 0, false}, // over 2^53: not exact as a JSON number read back
		{"none", false, 0, false},
	}
	for _, tt := range tests {
		if got, ok := parseInt(tt.in, tt.machine); got != tt.want || ok != tt.ok {
			t.Errorf("parseInt(%q, %v) = %v, %v; want %v, %v", tt.in, tt.machine, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseCurrency(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"1.299,00 €", "EUR"},
		{"$1,299.00", "$"},
		{"US$ 5", "USD"},
		{"R$ 10,00", "BRL"},
		{"CHF 1'299.–", "CHF"},
		{"1 299,00 zł", "PLN"},
		{"£3", "GBP"},
		{"EUR 12", "EUR"},
		{"12.00 USD", "USD"},
		{"25 kr", "kr"},
		{"¥1200", "¥"},
		{"Ukraine 5", ""},
		{"12 SKU", ""},
		{"12.00", ""},
	}
	for _, tt := range tests {
		got, ok := parseCurrency(tt.in)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("parseCurrency(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}
