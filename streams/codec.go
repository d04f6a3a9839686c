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
	// metaError carries a handler's error to the Subscriber (see RecordError).
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

// RecordError attaches a handler's error to msg so that the Subscriber can put it in the
// dead-letter entry if msg ends up there.
func RecordError(msg *message.Message, err error) {
	if err != nil {
		msg.Metadata.Set(metaError, err.Error())
	}
}

// metaPoison marks a message whose failure no retry can fix (see MarkPoison).
const metaPoison = "sc_poison"

// ErrPoison wraps errors that no retry can fix: a message that cannot be decoded, a URL
// that cannot be fetched. The router middleware marks such messages, and the Subscriber
// moves them to dead letters at once instead of retrying.
var ErrPoison = errors.New("poison")

// MarkPoison records err on msg and marks it for dead letters without retries.
func MarkPoison(msg *message.Message, err error) {
	RecordError(msg, err)
	msg.Metadata.Set(metaPoison, "1")
}
