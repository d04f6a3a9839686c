package demosite

// mix is the splitmix64 finaliser: a cheap, well-spread hash that never changes between
// Go releases (unlike math/rand streams), so the site stays byte-identical.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// pick returns a deterministic number in [0, n) for (id, salt).
func pick(id, salt, n int) int {
	return int(mix(uint64(id)<<16^uint64(salt)) % uint64(n))
}

// rng is a deterministic stream of numbers for generating text.
type rng struct{ state uint64 }

func (r *rng) intn(n int) int {
	r.state++
	return int(mix(r.state) % uint64(n))
}
