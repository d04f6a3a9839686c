package spiders

import "strings"

// The values Settings.Validate accepts for the response storage settings. Package
// handlers/internal/wire, which stores responses, defines its own constants for them
// (wire.CompressS2, ..., wire.DictOn, wire.DictOff); a test there checks that the two
// lists agree.
var (
	// responseCompressions are the values of Settings.ResponseCompression besides "".
	responseCompressions = []string{"s2", "fastest", "default", "better", "off"}
	// responseDicts are the values of Settings.ResponseDict besides "".
	responseDicts = []string{"on", "off"}
)

// oneOf lists values for an error message: "a, b or c".
func oneOf(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
