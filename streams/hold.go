package streams

import (
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// metaHeld marks a message handed out again after an outage (see hold).
const metaHeld = "sc_held"

// hold keeps a message whose handler failed because Redis refused a write: it stays
// ours (in flight, its slot taken, its idle time refreshed by the heartbeat), no
// delivery is counted and no dead letter written; it is handed out again after a
// growing wait, or at once when the outage ends. At shutdown it stays pending for our
// restart or a reclaim. It runs in its own goroutine, counted in waiters.
func (s *subscription) hold(msg *message.Message, id string, deliveries int) {
	defer s.waiters.Done()
	n, _ := strconv.Atoi(msg.Metadata.Get(metaHeld))
	t := time.NewTimer(outageBackoff(n))
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.cfg.Outage.ended():
	case <-s.ctx.Done():
		s.forget(id)
		s.release()
		return
	}
	again := msg.Copy()
	delete(again.Metadata, metaOutage)
	delete(again.Metadata, metaError)
	again.Metadata.Set(metaHeld, strconv.Itoa(n+1))
	s.waiters.Add(1)
	s.handOut(again, id, deliveries)
}
