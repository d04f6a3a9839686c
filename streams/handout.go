package streams

import (
	"context"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Handing entries to the handler and taking its verdict: what is in hand (inflight, the
// holds of fence.go), the message's context, and what each verdict does.

// register records entry id as in hand, delivered by a command that left at sent,
// unless it is already.
func (s *subscription) register(id string, sent time.Time) *hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.inflight[id]
	if h == nil {
		h = &hold{s: s, id: id, renewed: sent}
		s.inflight[id] = h
	}
	return h
}

// dispatch hands one entry (holding a slot) to the handler, or dead-letters it when it
// cannot be decoded. deliveries is the delivery count when known (0: unknown); sent is
// when the command that delivered it to us left (zero: unknown), from which its hold
// counts (see holdWindow).
func (s *subscription) dispatch(m redis.XMessage, deliveries int, sent time.Time) {
	msg, err := decode(m.Values)
	if err != nil {
		s.log.Warn("malformed entry; moving it to dead letters", zap.String("entry_id", m.ID), zap.Error(err))
		s.forget(m.ID)
		s.deadLetter(m.ID, deliveries, err.Error())
		s.release()
		return
	}
	msg.Metadata.Set(MetaStreamID, m.ID)
	if deliveries > 0 {
		msg.Metadata.Set(MetaDeliveries, strconv.Itoa(deliveries))
	}
	s.register(m.ID, sent)
	s.waiters.Add(1)
	s.handOut(msg, m.ID, deliveries)
}

// handOut gives msg (holding a slot, counted in waiters, in inflight) to the handler.
// The message's context ends with the handler's verdict (Ack or Nack), as Watermill's
// subscribers do, or at the shutdown deadline.
func (s *subscription) handOut(msg *message.Message, id string, deliveries int) {
	ctx, done := context.WithCancel(s.hard)
	if h := s.holdOf(id); h != nil {
		h.mu.Lock()
		h.cancel = done
		h.mu.Unlock()
		ctx = context.WithValue(ctx, holdKey{}, h)
	}
	msg.SetContext(ctx)
	select {
	case s.out <- msg:
		go s.await(msg, id, deliveries, done)
	case <-s.hard.Done():
		// Never handed out: it stays pending for our restart or a reclaim.
		done()
		s.forget(id)
		s.waiters.Done()
		s.release()
	}
}

// await waits for the handler's verdict on one message, then ends its context (done).
func (s *subscription) await(msg *message.Message, id string, deliveries int, done context.CancelFunc) {
	defer s.waiters.Done()
	defer done()
	h := s.holdOf(id)
	select {
	case <-msg.Acked():
		if h != nil && h.isLost() {
			// Its output went out (harmless: see the stages' docs); the entry is someone
			// else's or not confirmed ours: no ack of ours.
			s.forget(id)
			s.release()
			return
		}
		if msg.Metadata.Get(metaHeld) != "" {
			s.cfg.Outage.accepted() // its writes went through
		}
		if s.cfg.BeforeAck != nil {
			s.cfg.BeforeAck(msg)
		}
		s.acks.add(id)
		s.forget(id)
		s.release()
	case <-msg.Nacked():
		if h != nil && h.isLost() {
			// Not ours (or not confirmed ours): no retry, no dead letter; whoever holds it
			// does the work, or a reclaim gives it back to us.
			s.forget(id)
			s.release()
			return
		}
		if msg.Metadata.Get(metaOutage) != "" {
			s.waiters.Add(1)
			go s.hold(msg, id, deliveries)
			return
		}
		if msg.Metadata.Get(metaPoison) != "" {
			s.log.Warn("poison message moved to dead letters", zap.String("entry_id", id),
				zap.String("error", msg.Metadata.Get(metaError)))
			s.deadLetter(id, deliveries, msg.Metadata.Get(metaError))
			s.forget(id) // only now: until it is dead, it is not an orphan (orphans.go)
			s.release()
			return
		}
		s.mu.Lock()
		s.retrying[id] = true // ours, waiting for its redelivery: not an orphan
		delete(s.inflight, id)
		s.mu.Unlock()
		s.release()
		s.waiters.Add(1)
		go s.retry(id, deliveries, msg.Metadata.Get(metaError))
	case <-s.hard.Done():
		// Shutdown deadline: left pending for our restart or a reclaim.
		s.forget(id)
		s.release()
	}
}

// holdOf returns our hold on entry id (nil when it is not in flight).
func (s *subscription) holdOf(id string) *hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight[id]
}

func (s *subscription) forget(id string) {
	s.mu.Lock()
	delete(s.inflight, id)
	s.mu.Unlock()
}
