package handlers

import (
	"github.com/ThreeDotsLabs/watermill"
	"go.uber.org/zap"
)

// zapAdapter is Watermill's logger on zap. The router's own info chatter goes to debug.
type zapAdapter struct{ log *zap.Logger }

func newZapAdapter(log *zap.Logger) watermill.LoggerAdapter { return zapAdapter{log: log} }

func (z zapAdapter) fields(f watermill.LogFields) []zap.Field {
	out := make([]zap.Field, 0, len(f))
	for k, v := range f {
		out = append(out, zap.Any(k, v))
	}
	return out
}

func (z zapAdapter) Error(msg string, err error, f watermill.LogFields) {
	z.log.Debug(msg, append(z.fields(f), zap.Error(err))...) // handler errors are logged by the stage
}
func (z zapAdapter) Info(msg string, f watermill.LogFields)  { z.log.Debug(msg, z.fields(f)...) }
func (z zapAdapter) Debug(msg string, f watermill.LogFields) { z.log.Debug(msg, z.fields(f)...) }
func (z zapAdapter) Trace(string, watermill.LogFields)       {}
func (z zapAdapter) With(f watermill.LogFields) watermill.LoggerAdapter {
	return zapAdapter{log: z.log.With(z.fields(f)...)}
}
