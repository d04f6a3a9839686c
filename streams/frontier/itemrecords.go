package frontier

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Versioned items: instead of the key set (KEYS[14] of the emit script), each item key
// has a record (spiders.ItemRecord: its version and field hashes) in one of
// Config.ItemRecordBuckets small hashes of its partition. The parse stage reads the
// records of a page's item keys (ItemRecords), makes the new versions, and the emit
// script stores each record in the step that appends its item, if the record is still
// the one read (see emitItemsLua).

// defaultItemRecordBuckets is Config.ItemRecordBuckets' default.
const defaultItemRecordBuckets = 1024

// itemRecordsKey returns the records hash of item key key in partition part.
func (f *Frontier) itemRecordsKey(part int, key []byte) string {
	n := f.cfg.ItemRecordBuckets
	if n == 0 {
		n = defaultItemRecordBuckets
	}
	var b uint32
	if len(key) >= 4 {
		b = binary.BigEndian.Uint32(key) % n
	}
	return f.layout.Parts[part].ItemRecords(b)
}

// ItemRecords returns the records stored for the item keys of partition part (nil
// where a key has none), read in one round trip.
func (f *Frontier) ItemRecords(ctx context.Context, part int, keys [][]byte) ([][]byte, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	pipe := f.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.HGet(ctx, f.itemRecordsKey(part, k), string(k))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("frontier: item records: %w", err)
	}
	out := make([][]byte, len(keys))
	for i, c := range cmds {
		b, err := c.Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("frontier: item records: %w", err)
		}
		out[i] = b
	}
	return out, nil
}
