// Package conf holds what the handlers' Config types share when they fill in their
// defaults.
package conf

// Positive sets *v to def unless *v is above zero: a count, size or duration left at
// zero, or set below it, takes its default.
func Positive[T ~int | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
