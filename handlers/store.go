package handlers

import (
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// storer is the store stage (and a post-processor's stage): it runs the item processors in
// order, writes the item to the sink and returns once the sink has it durably (or
// already had it under the same key).
type storer struct {
	sink       processors.Sink
	processors processors.Chain
	counters   *streams.Counters
	// stored, when set, is told of each item written (post-processors, which do not
	// count in the crawl's stats, feed their metrics through it).
	stored func()
}

// newStorer returns the store stage writing to sink after chain. counters may be nil.
func newStorer(sink processors.Sink, chain processors.Chain, counters *streams.Counters) (*storer, error) {
	if sink == nil {
		return nil, errors.New("handlers: store needs a sink")
	}
	return &storer{sink: sink, processors: chain, counters: counters}, nil
}

// handle stores the item in msg.
func (s *storer) handle(msg *message.Message) error {
	it, err := spiders.UnmarshalItem(msg.Payload)
	if err != nil {
		return fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	keep, err := s.processors.Process(msg.Context(), it)
	if err != nil {
		return fmt.Errorf("handlers: process item %s: %w", it.Key(), err)
	}
	if !keep {
		if s.counters != nil {
			s.counters.Add("items_dropped", 1)
		}
		return nil
	}
	// A store that slept while another took the item over leaves it to that one; one
	// that slept past this check stores it twice, which sinks keyed by item skip.
	if err := streams.Held(msg.Context()); err != nil {
		return err
	}
	stored, err := s.sink.Store(msg.Context(), it)
	if err != nil {
		return fmt.Errorf("handlers: store item %s: %w", it.Key(), err)
	}
	if stored && s.stored != nil {
		s.stored()
	}
	if s.counters != nil {
		if stored {
			s.counters.Add("items_stored", 1)
		} else {
			s.counters.Add("items_duplicate", 1)
		}
	}
	return nil
}
