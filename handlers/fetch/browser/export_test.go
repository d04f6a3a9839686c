package browser

// PIDs returns the process IDs of p's started browsers in service.
func PIDs(p *Pool) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for _, b := range p.browsers {
		if b.pid > 0 {
			out = append(out, b.pid)
		}
	}
	return out
}

// ReapOrphans reaps the Chromium zombies this process adopted.
func ReapOrphans() int { return reapOrphans() }
