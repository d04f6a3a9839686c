package sitekit

import "strings"

// Mix is the splitmix64 finaliser: a cheap, well-spread hash that never changes between
// Go releases (unlike math/rand streams), so the sites stay byte-identical.
func Mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Pick returns a deterministic number in [0, n) for (id, salt).
func Pick(id, salt, n int) int {
	return int(Mix(uint64(id)<<16^uint64(salt)) % uint64(n))
}

// Rand is a deterministic stream of numbers for generating text. Its State is the
// seed; the same seed always gives the same stream.
type Rand struct{ State uint64 }

// Intn returns the next number of the stream, in [0, n).
func (r *Rand) Intn(n int) int {
	r.State++
	return int(Mix(r.State) % uint64(n))
}

// Sentences returns n generated sentences of shortest to longest words (at random) from
// words, each capitalised and ended by a period. With plain ASCII words the text needs
// no escaping in HTML.
func (r *Rand) Sentences(words []string, n, shortest, longest int) string {
	var b strings.Builder
	for s := 0; s < n; s++ {
		if s > 0 {
			b.WriteByte(' ')
		}
		m := shortest + r.Intn(longest-shortest+1)
		for w := 0; w < m; w++ {
			word := words[r.Intn(len(words))]
			if w == 0 {
				word = strings.ToUpper(word[:1]) + word[1:]
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(word)
		}
		b.WriteByte('.')
	}
	return b.String()
}
