package wire

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Values of spiders.Settings.ResponseCompression (response_compression): the zstd level
// stored responses are written with, S2, or none. Package spiders validates the setting
// against its own copy of these values (settings_test.go checks that they agree). Whatever a process writes, it reads every one of them (a zstd
// response is a zstd frame, an S2 one starts with its own marker, one written plain
// with the version 3 marker).
const (
	CompressS2      = "s2"
	CompressFastest = "fastest"
	CompressDefault = "default"
	CompressBetter  = "better"
	CompressOff     = "off"
)

// DefaultCompression is what Marshal and MarshalWith use for "", and the setting ""
// stands for when responses are retained (CompressionFor).
const DefaultCompression = CompressFastest

// CompressionFor is the compression a fetch process stores responses with under the
// setting c: c itself when it is set. The default ("") depends on whether the crawl
// keeps responses once parsed (retained: settings.retention or --retain for responses):
// when it does, the bytes last and the default is fastest zstd with the crawl's
// dictionary (about 25% of a shop page); when it does not, a response lives in Redis only
// until it is parsed and the default is S2, which costs about half of fastest's CPU for
// about 1.8 times its bytes (measured on 25 KB shop pages, see the README).
func CompressionFor(c string, retained bool) string {
	switch {
	case c != "":
		return c
	case retained:
		return DefaultCompression
	}
	return CompressS2
}

// CompressionUsesDict reports whether responses stored with the compression setting c
// ("" the default) use the crawl's dictionary (spiders.Settings.ResponseDict): the zstd
// levels do; S2 and off do not (S2's own dictionaries cost more to decode than they
// save on the shop's pages, see the README).
func CompressionUsesDict(c string) bool {
	_, zstdLevel, err := levelOf(c)
	return err == nil && zstdLevel
}

// levelOf is the zstd level of the setting c ("" the default); ok is false for
// off and for S2.
func levelOf(c string) (level zstd.EncoderLevel, ok bool, err error) {
	if c == "" {
		c = DefaultCompression
	}
	switch c {
	case CompressS2:
		return 0, false, nil
	case CompressFastest:
		return zstd.SpeedFastest, true, nil
	case CompressDefault:
		return zstd.SpeedDefault, true, nil
	case CompressBetter:
		return zstd.SpeedBetterCompression, true, nil
	case CompressOff:
		return 0, false, nil
	}
	return 0, false, fmt.Errorf("wire: response compression %q: want s2, fastest, default, better or off", c)
}

// encoderOptions are the options of every response encoder: the level, up to GOMAXPROCS
// encodes at once (EncodeAll is safe for concurrent use), and a 512 KB window: each
// concurrent encode keeps a history of its window, 8 MB by default, and a page's repeats
// are within a few KB.
func encoderOptions(level zstd.EncoderLevel, more ...zstd.EOption) []zstd.EOption {
	return append([]zstd.EOption{zstd.WithEncoderLevel(level), zstd.WithWindowSize(512 << 10),
		zstd.WithLowerEncoderMem(true)}, more...)
}

// zstdEncoder compresses responses at the default level without a dictionary;
// zstdEncoderErr says why it could not be made (Marshal returns it).
var zstdEncoder, zstdEncoderErr = zstd.NewWriter(nil, encoderOptions(zstd.SpeedFastest)...)

// encoderKey names an encoder of the cache: a level and a dictionary (nil: none).
type encoderKey struct {
	level zstd.EncoderLevel
	dict  *Dict
}

// cachedEncoder is an encoder of the cache, made once.
type cachedEncoder struct {
	once sync.Once
	enc  *zstd.Encoder
	err  error
}

// encoders are the encoders of the levels and dictionaries in use besides the default
// ones (each is made on first use and kept: a process uses one or two).
var encoders sync.Map // encoderKey -> *cachedEncoder

// encoderFor returns the encoder of level with the dictionary d (nil: none).
func encoderFor(level zstd.EncoderLevel, d *Dict) (*zstd.Encoder, error) {
	if level == zstd.SpeedFastest {
		if d != nil {
			return d.enc, nil
		}
		if zstdEncoderErr != nil {
			return nil, fmt.Errorf("wire: response encoder: %w", zstdEncoderErr)
		}
		return zstdEncoder, nil
	}
	v, _ := encoders.LoadOrStore(encoderKey{level, d}, &cachedEncoder{})
	c := v.(*cachedEncoder)
	c.once.Do(func() {
		var more []zstd.EOption
		if d != nil {
			more = append(more, zstd.WithEncoderDict(d.data))
		}
		c.enc, c.err = zstd.NewWriter(nil, encoderOptions(level, more...)...)
		if c.err != nil {
			c.err = fmt.Errorf("wire: response encoder: %w", c.err)
		}
	})
	return c.enc, c.err
}
