// Package rkit is the Redis plumbing the transport (streams) and the frontier share: a
// group-commit batcher of commands, a gate that closes a queue without losing what got
// in, and checks of Redis replies. Periodic work, back-off and rate-limited error logs
// are in streams/loop.
package rkit
