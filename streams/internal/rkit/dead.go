package rkit

import "strconv"

// A dead letter is an entry of a partition's dead-letter stream: the fields below, then
// the fields of what died (a stream entry's Watermill message: _watermill_message_uuid,
// metadata, payload). Dead letters are written here only: by dead() in Lua for stream
// entries that die inside a script (a redelivery past its limit, a reclaim, a
// malformed entry), and by Dead.Values for those written from Go (an unreadable
// legacy frontier member, an invalid runtime seed). streams/inspect reads them.
const (
	// DeadStream is the key the dead entry lived in.
	DeadStream = "sc_stream"
	// DeadID is its entry ID there (stream entries only).
	DeadID = "sc_id"
	// DeadStage is the group (stage) that gave up on it, or "frontier", "seed".
	DeadStage = "sc_stage"
	// DeadError is the last error.
	DeadError = "sc_error"
	// DeadDeliveries is how often it was delivered.
	DeadDeliveries = "sc_deliveries"
	// DeadConsumer is the consumer that gave up on it (stream entries only).
	DeadConsumer = "sc_consumer"
)

// Dead is a dead letter written from Go (see the fields of the same names above).
type Dead struct {
	// Stream is the key what died lived in.
	Stream string
	// ID is its entry ID there (stream entries only).
	ID string
	// Stage is who gave up on it.
	Stage string
	// Error is why.
	Error string
	// Deliveries is how often it was delivered.
	Deliveries int
	// Consumer is the consumer that gave up on it.
	Consumer string
}

// Values returns the XADD values of the dead letter (fields without a value left
// out), then fields (field, value pairs of what died).
func (d Dead) Values(fields ...any) []any {
	v := make([]any, 0, 12+len(fields))
	for _, f := range [][2]string{{DeadStream, d.Stream}, {DeadID, d.ID}, {DeadStage, d.Stage}, {DeadError, d.Error},
		{DeadDeliveries, strconv.Itoa(d.Deliveries)}, {DeadConsumer, d.Consumer}} {
		if f[1] != "" {
			v = append(v, f[0], f[1])
		}
	}
	return append(v, fields...)
}

// LuaDead defines dead(): copy a stream entry to the dead-letter stream with why it
// died, then ack it. Scripts that can kill an entry start with it, so the move is
// atomic.
//
// stream, deadstream, group, id, consumer, deliveries, err
const LuaDead = `
local function dead(stream, deadstream, group, id, consumer, deliveries, err)
  local fields = {'` + DeadStream + `', stream, '` + DeadID + `', id, '` + DeadStage + `', group, '` + DeadError + `', err,
                  '` + DeadDeliveries + `', tostring(deliveries), '` + DeadConsumer + `', consumer}
  local e = redis.call('XRANGE', stream, id, id)
  if #e > 0 then
    for _, v in ipairs(e[1][2]) do fields[#fields + 1] = v end
  end
  redis.call('XADD', deadstream, '*', unpack(fields))
  redis.call('XACK', stream, group, id)
end
`
