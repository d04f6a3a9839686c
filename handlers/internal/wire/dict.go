package wire

import (
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/zstd"
)

// Response dictionaries: a zstd dictionary trained on a crawl's first responses makes the
// ones after it smaller in Redis (about a third on the demo shop; figures in the README).
// The zstd frame header of a response names its dictionary's ID; a process decodes it
// once the dictionary is registered here (handlers load it from Redis by ID). Responses
// written without a dictionary (before it existed, or with it turned off) carry no ID
// and decode as before.

// Values of spiders.Settings.ResponseDict (response_dict). Package spiders validates the
// setting against its own copy of these values (settings_test.go checks that they agree).
const (
	DictOn  = "on"
	DictOff = "off"
)

// ErrUnknownDict is returned for a response compressed with a dictionary this process
// has not registered (see RegisterDict).
var ErrUnknownDict = errors.New("wire: response compressed with an unknown dictionary")

// DefaultDictSize is the size of a trained dictionary.
const DefaultDictSize = 64 << 10

// Dict is a zstd dictionary for responses, with its encoder.
type Dict struct {
	id   uint32
	data []byte
	enc  *zstd.Encoder
}

// NewDict loads a dictionary in zstd format (as TrainDict makes it).
func NewDict(data []byte) (*Dict, error) {
	info, err := zstd.InspectDictionary(data)
	if err != nil {
		return nil, fmt.Errorf("wire: response dictionary: %w", err)
	}
	if info.ID() == 0 {
		return nil, errors.New("wire: response dictionary has no ID")
	}
	enc, err := zstd.NewWriter(nil, encoderOptions(zstd.SpeedFastest, zstd.WithEncoderDict(data))...)
	if err != nil {
		return nil, fmt.Errorf("wire: response dictionary: %w", err)
	}
	return &Dict{id: info.ID(), data: data, enc: enc}, nil
}

// TrainDict builds a dictionary of DefaultDictSize from samples (the JSON of
// responses, see Plain), with a random ID.
func TrainDict(samples [][]byte) (*Dict, error) {
	if len(samples) < 8 {
		return nil, fmt.Errorf("wire: %d samples are too few to train a dictionary", len(samples))
	}
	data, err := dict.BuildZstdDict(samples, dict.Options{MaxDictSize: DefaultDictSize, HashBytes: 8,
		ZstdLevel: zstd.SpeedFastest})
	if err != nil {
		return nil, fmt.Errorf("wire: train dictionary: %w", err)
	}
	return NewDict(data)
}

// ID is the dictionary's ID, written in the frame header of what it compresses.
func (d *Dict) ID() uint32 { return d.id }

// Bytes is the dictionary in zstd format (to store and load with NewDict).
func (d *Dict) Bytes() []byte { return d.data }

// dictDecoders are the decoders of the registered dictionaries, by ID.
var dictDecoders sync.Map // uint32 -> *decoders

// decoders are the decoders of one dictionary (or of none): a pool of streaming ones
// for frames of unknown size, and one for frames that state their size (all this
// build writes), whose DecodeAll runs up to GOMAXPROCS decodes at once. Sharing one
// keeps its buffers across collections, which empty a pool.
type decoders struct {
	streams sync.Pool
	all     *zstd.Decoder
}

// newDecoders returns the decoders of the dictionary data (nil: none).
func newDecoders(data []byte) (*decoders, error) {
	opts := []zstd.DOption{zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(16 << 20)} // our encoder's window is 8 MB at most
	if data != nil {
		opts = append(opts, zstd.WithDecoderDicts(data))
	}
	all, err := zstd.NewReader(nil, append(opts, zstd.WithDecoderConcurrency(0), zstd.WithDecodeAllCapLimit(true))...)
	if err != nil {
		return nil, fmt.Errorf("wire: response decoder: %w", err)
	}
	d := &decoders{all: all}
	d.streams.New = func() any {
		dec, err := zstd.NewReader(nil, append(opts, zstd.WithDecoderConcurrency(1))...)
		if err != nil {
			panic(err) // the same options made d.all
		}
		return dec
	}
	return d, nil
}

// RegisterDict lets this process decode responses compressed with d. IDs are
// random 31-bit numbers: a process may hold the dictionaries of several crawls.
func RegisterDict(d *Dict) {
	if _, ok := dictDecoders.Load(d.id); ok {
		return
	}
	decs, err := newDecoders(d.data)
	if err != nil {
		panic(err) // the dictionary was checked by NewDict
	}
	dictDecoders.LoadOrStore(d.id, decs)
}

// DictRegistered reports whether the dictionary id is registered.
func DictRegistered(id uint32) bool {
	_, ok := dictDecoders.Load(id)
	return ok
}

// DictID returns the dictionary ID a stored response was compressed with (0:
// none, or not a compressed response).
func DictID(payload []byte) uint32 {
	var h zstd.Header
	if len(payload) < 4 || string(payload[:4]) != string(zstdMagic) || h.Decode(payload) != nil {
		return 0
	}
	return h.DictionaryID
}

// decodersFor returns the decoders for the zstd data b: by its dictionary ID.
func decodersFor(b []byte) (*decoders, error) {
	id := DictID(b)
	if id == 0 {
		return plainDecoders()
	}
	p, ok := dictDecoders.Load(id)
	if !ok {
		return nil, fmt.Errorf("%w (id %d)", ErrUnknownDict, id)
	}
	return p.(*decoders), nil
}

// plainDecoders are the decoders of responses compressed without a dictionary.
var plainDecoders = sync.OnceValues(func() (*decoders, error) { return newDecoders(nil) })
