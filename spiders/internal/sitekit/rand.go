package sitekit

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
