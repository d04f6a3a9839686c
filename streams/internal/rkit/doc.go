// Package rkit is the Redis plumbing the transport (streams) and the frontier share: a
// group-commit batcher of commands, a gate that closes a queue without losing what got
// in, a rate-limited logger for hot error paths, and checks of Redis replies.
package rkit
