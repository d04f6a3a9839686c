package handlers

import (
	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// RedactingEncoder wraps enc so that no line it encodes shows the credentials of a URL
// (spiders.RedactText over the whole line): a log line is text for people, wherever its
// URL or error came from (a fetch error, the browser's, a proxy's). The streamcrawl
// command's logger and the default logger of Run use it.
func RedactingEncoder(enc zapcore.Encoder) zapcore.Encoder { return redactingEncoder{enc} }

type redactingEncoder struct{ zapcore.Encoder }

func (e redactingEncoder) Clone() zapcore.Encoder { return redactingEncoder{e.Encoder.Clone()} }

func (e redactingEncoder) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	buf, err := e.Encoder.EncodeEntry(ent, fields)
	if err != nil || buf == nil {
		return buf, err
	}
	if r := spiders.RedactBytes(buf.Bytes()); len(r) != buf.Len() {
		buf.Reset()
		_, _ = buf.Write(r)
	}
	return buf, nil
}
