package spiders

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

// Values of Settings.ResponseDict.
const (
	ResponseDictOn  = "on"
	ResponseDictOff = "off"
)

// ErrUnknownDict is returned for a response compressed with a dictionary this process
// has not registered (see RegisterResponseDict).
var ErrUnknownDict = errors.New("spiders: response compressed with an unknown dictionary")

// DefaultDictSize is the size of a trained dictionary.
const DefaultDictSize = 64 << 10

// ResponseDict is a zstd dictionary for responses, with its encoder.
type ResponseDict struct {
	id   uint32
	data []byte
	enc  *zstd.Encoder
}

// NewResponseDict loads a dictionary in zstd format (as TrainResponseDict makes it).
func NewResponseDict(data []byte) (*ResponseDict, error) {
	info, err := zstd.InspectDictionary(data)
	if err != nil {
		return nil, fmt.Errorf("spiders: response dictionary: %w", err)
	}
	if info.ID() == 0 {
		return nil, errors.New("spiders: response dictionary has no ID")
	}
	enc, err := zstd.NewWriter(nil, encoderOptions(zstd.SpeedFastest, zstd.WithEncoderDict(data))...)
	if err != nil {
		return nil, fmt.Errorf("spiders: response dictionary: %w", err)
	}
	return &ResponseDict{id: info.ID(), data: data, enc: enc}, nil
}

// TrainResponseDict builds a dictionary of DefaultDictSize from samples (the JSON of
// responses, see ResponsePlain), with a random ID.
func TrainResponseDict(samples [][]byte) (*ResponseDict, error) {
	if len(samples) < 8 {
		return nil, fmt.Errorf("spiders: %d samples are too few to train a dictionary", len(samples))
	}
	data, err := dict.BuildZstdDict(samples, dict.Options{MaxDictSize: DefaultDictSize, HashBytes: 8,
		ZstdLevel: zstd.SpeedFastest})
	if err != nil {
		return nil, fmt.Errorf("spiders: train dictionary: %w", err)
	}
	return NewResponseDict(data)
}

// ID is the dictionary's ID, written in the frame header of what it compresses.
func (d *ResponseDict) ID() uint32 { return d.id }

// Bytes is the dictionary in zstd format (to store and load with NewResponseDict).
func (d *ResponseDict) Bytes() []byte { return d.data }

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
		return nil, fmt.Errorf("spiders: response decoder: %w", err)
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

// RegisterResponseDict lets this process decode responses compressed with d. IDs are
// random 31-bit numbers: a process may hold the dictionaries of several crawls.
func RegisterResponseDict(d *ResponseDict) {
	if _, ok := dictDecoders.Load(d.id); ok {
		return
	}
	decs, err := newDecoders(d.data)
	if err != nil {
		panic(err) // the dictionary was checked by NewResponseDict
	}
	dictDecoders.LoadOrStore(d.id, decs)
}

// ResponseDictRegistered reports whether the dictionary id is registered.
func ResponseDictRegistered(id uint32) bool {
	_, ok := dictDecoders.Load(id)
	return ok
}

// ResponseDictID returns the dictionary ID a stored response was compressed with (0:
// none, or not a compressed response).
func ResponseDictID(payload []byte) uint32 {
	var h zstd.Header
	if len(payload) < 4 || string(payload[:4]) != string(zstdMagic) || h.Decode(payload) != nil {
		return 0
	}
	return h.DictionaryID
}

// decodersFor returns the decoders for the zstd data b: by its dictionary ID.
func decodersFor(b []byte) (*decoders, error) {
	id := ResponseDictID(b)
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
