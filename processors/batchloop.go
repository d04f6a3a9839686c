package processors

// maxBatch is the most items a file sink writes (and fsyncs) at once.
const maxBatch = 4096

// batchLoop is the group commit of the file sinks: it takes the requests queued on reqs
// (waiting for the first, then whatever else is already there, up to maxBatch) and hands
// them to write as one batch, until stop is closed.
func batchLoop[T any](reqs <-chan T, stop <-chan struct{}, write func([]T)) {
	batch := make([]T, 0, 64)
	for {
		select {
		case r := <-reqs:
			batch = append(batch[:0], r)
		case <-stop:
			return
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case r := <-reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		write(batch)
	}
}
