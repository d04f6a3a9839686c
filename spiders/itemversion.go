package spiders

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
)

// ItemRecord is what a versioned item's key keeps between versions (see
// Settings.ItemVersioned): the version last emitted and, per field, a 32-bit hash of
// its name and one of its value. Encoded (Bytes) it is the version as a uvarint, then 8
// bytes per field (name hash, value hash, big-endian) in the order of the name hashes:
// 41 bytes for an item of five fields. Only Fields count: the page an item came from
// (_url), when (_crawled_at) and the request's meta do not make a new version.
//
// Two values whose 32-bit hashes collide are taken for the same (one change in about
// four billion goes unseen until the next one).
type ItemRecord struct {
	// Version is the item's version (1, 2, ...); 0 for no record.
	Version int
	fields  []fieldHash // sorted by name
	names   map[uint32]string
}

type fieldHash struct{ name, value uint32 }

// NewItemRecord returns the record of it at version.
func NewItemRecord(it *Item, version int) (ItemRecord, error) {
	r := ItemRecord{Version: version, fields: make([]fieldHash, 0, len(it.Fields)), names: make(map[uint32]string, len(it.Fields))}
	for name, v := range it.Fields {
		b, err := json.Marshal(v) // maps marshal with sorted keys: the same value, the same bytes
		if err != nil {
			return ItemRecord{}, fmt.Errorf("spiders: item field %q: %w", name, err)
		}
		nh := hash32([]byte(name))
		r.fields = append(r.fields, fieldHash{name: nh, value: hash32(b)})
		r.names[nh] = name
	}
	sort.Slice(r.fields, func(i, j int) bool { return r.fields[i].name < r.fields[j].name })
	return r, nil
}

func hash32(b []byte) uint32 {
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}

// ParseItemRecord decodes a record written by Bytes; nil or empty is no record
// (version 0).
func ParseItemRecord(b []byte) (ItemRecord, error) {
	if len(b) == 0 {
		return ItemRecord{}, nil
	}
	v, n := binary.Uvarint(b)
	if n <= 0 || (len(b)-n)%8 != 0 || v == 0 || v > 1<<31 {
		return ItemRecord{}, fmt.Errorf("spiders: malformed item record (%d bytes)", len(b))
	}
	r := ItemRecord{Version: int(v)}
	for rest := b[n:]; len(rest) > 0; rest = rest[8:] {
		r.fields = append(r.fields, fieldHash{name: binary.BigEndian.Uint32(rest), value: binary.BigEndian.Uint32(rest[4:])})
	}
	return r, nil
}

// Bytes encodes the record.
func (r ItemRecord) Bytes() []byte {
	b := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen32+8*len(r.fields)), uint64(r.Version))
	for _, f := range r.fields {
		b = binary.BigEndian.AppendUint32(b, f.name)
		b = binary.BigEndian.AppendUint32(b, f.value)
	}
	return b
}

// Same reports whether r and o have the same fields with the same values, whatever
// their versions.
func (r ItemRecord) Same(o ItemRecord) bool { return slices.Equal(r.fields, o.fields) }

// Changed returns, sorted, the names of r's fields that prev lacks or holds another
// value in, and of prev's fields that r lacks. r must come from NewItemRecord (it knows
// its own names); a field only prev has is named by names (the names of fields seen
// before), or as "#" and its name hash in hex when names does not know it.
func (r ItemRecord) Changed(prev ItemRecord, names func(hash uint32) (string, bool)) []string {
	var out []string
	i, j := 0, 0
	for i < len(r.fields) || j < len(prev.fields) {
		switch {
		case j == len(prev.fields) || (i < len(r.fields) && r.fields[i].name < prev.fields[j].name):
			out = append(out, r.names[r.fields[i].name]) // new field
			i++
		case i == len(r.fields) || prev.fields[j].name < r.fields[i].name:
			name, ok := "", false
			if names != nil {
				name, ok = names(prev.fields[j].name)
			}
			if !ok {
				name = fmt.Sprintf("#%08x", prev.fields[j].name)
			}
			out = append(out, name) // a field the new version lacks
			j++
		default:
			if r.fields[i].value != prev.fields[j].value {
				out = append(out, r.names[r.fields[i].name])
			}
			i++
			j++
		}
	}
	slices.Sort(out)
	return out
}

// Names calls fn with the hash and the name of each of r's fields (r from
// NewItemRecord), so a caller can name later the fields a newer version lacks.
func (r ItemRecord) Names(fn func(hash uint32, name string)) {
	for h, n := range r.names {
		fn(h, n)
	}
}
