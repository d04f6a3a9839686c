package streams

import (
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
)

// Metadata keys the Subscriber sets on every message it hands out.
const (
	// MetaStreamID is the entry ID of the message in its stream.
	MetaStreamID = "sc_stream_id"
	// MetaDeliveries is how many times the entry has been delivered, this time included.
	MetaDeliveries = "sc_deliveries"
	// metaError carries a handler's error to the Subscriber (see Fail).
	metaError = "sc_error"
)

// wire is watermill-redisstream's format: our streams stay readable by any Watermill
// subscriber, and theirs by ours.
var wire redisstream.DefaultMarshallerUnmarshaller

// encode returns the stream fields of msg.
func encode(msg *message.Message) (map[string]any, error) {
	v, err := wire.Marshal("", msg)
	if err != nil {
		return nil, fmt.Errorf("streams: encode message %s: %w", msg.UUID, err)
	}
	return v, nil
}

// decode builds a message from stream fields; a malformed entry is an error, never a panic.
func decode(values map[string]any) (msg *message.Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, err = nil, fmt.Errorf("streams: malformed entry: %v", r)
		}
	}()
	msg, err = wire.Unmarshal(values)
	if err != nil {
		return nil, fmt.Errorf("streams: malformed entry: %w", err)
	}
	return msg, nil
}

// recordError attaches a handler's error to msg so that the Subscriber can put it in the
// dead-letter entry if msg ends up there.
func recordError(msg *message.Message, err error) {
	if err != nil {
		msg.Metadata.Set(metaError, err.Error())
	}
}

// metaPoison marks a message whose failure no retry can fix.
const metaPoison = "sc_poison"

// ErrPoison wraps errors that no retry can fix: a message that cannot be decoded, a URL
// that cannot be fetched. A message failed with one (Fail) goes to the dead letters at
// once instead of being retried.
var ErrPoison = errors.New("poison")

// Fail records a handler's error on msg before the handler nacks it, and so decides
// what the Subscriber does with it: an error of a write that Redis refused for its own
// reasons (out of memory, read-only, a loading server, ...) holds msg for the outage,
// recorded in o (no delivery counted, no dead letter; handed out again once Redis takes
// writes); an error wrapping ErrPoison sends it to the dead letters at once (checked
// first: it may wrap a site's network error); any other
// error is retried after a backoff, and dead-lettered with it after MaxDeliveries. It
// reports whether err was such an ordinary failure, for the caller to log. o may be
// nil.
func Fail(msg *message.Message, err error, o *Outage) (ordinary bool) {
	recordError(msg, err)
	switch {
	case errors.Is(err, ErrPoison):
		// About the message, whatever it wraps: a fetch that failed for good carries the
		// site's network error, which is no Redis outage.
		msg.Metadata.Set(metaPoison, "1") // the subscriber logs its move to dead letters
		return false
	case o.refused(err):
		msg.Metadata.Set(metaOutage, "1")
		return false
	}
	return true
}
