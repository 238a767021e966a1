// Package pipeline sends many commands over one connection without waiting
// for each reply: Batch for an explicit group of commands executed at
// once, Stream for long runs (millions of commands) with a bounded window
// of commands in flight.
//
// Both keep their replies in send order and hand each command exactly one
// outcome: its own reply (which may be a server error) or the fault that
// broke the connection.
package pipeline
