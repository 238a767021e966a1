// Package resp encodes and decodes RESP2 and RESP3, the protocol of Valkey
// and Redis.
//
// # Decoding
//
// A Reader decodes replies from a stream without copying: a Value's
// strings view the Reader's read buffer and its elements view an arena of
// Values that the Reader reuses. A Value is therefore valid only until the
// next call to Reader.Next. To keep one longer, Clone it (allocates) or
// Retain it in an Arena (reuses memory across Resets). In steady state a
// Reader allocates nothing per reply. Reader.Scalars decodes the scalar
// replies already buffered straight into a slice, retained in an Arena:
// the bulk path of a pipeline that keeps every reply.
//
// Every RESP3 type is decoded: simple string, simple error, integer, bulk
// string, array, null, boolean, double (including inf, -inf and nan), big
// number, bulk error, verbatim string, map, set, attribute and push.
// RESP2's null bulk string and null array are decoded as Null. An attribute
// is attached to the value it precedes (Value.Attr). Streamed RESP3 strings
// and aggregates ("$?", "*?", ";", ".") are refused with a ProtocolError:
// neither Valkey nor Redis sends them, and a streamed string cannot be a
// zero-copy view.
//
// # Bounds
//
// Limits bound the length of a bulk string, of an aggregate, of a line, the
// nesting depth, the number of values in one reply and the memory its
// decoded Values take (MaxReplyBytes, default 64 MiB: each aggregate
// element counts unsafe.Sizeof(Value{}) bytes). Every bound is checked as
// soon as the header that breaks it is read, before anything is allocated
// for what it declares; no buffer is ever sized by a length the peer
// claimed but did not send: the read buffer at most doubles over the
// bytes that actually arrived. So a reply's memory stays in proportion to
// the wire: its strings view the read buffer, and its Values (a null
// takes 3 bytes on the wire, its Value 72 on 64-bit platforms) fit in
// MaxReplyBytes, which bounds the Reader's value arena (plus the one
// top-level Value) and what a Clone or Arena.Retain of the reply copies
// (plus its string bytes).
//
// A well-formed reply over MaxReplyBytes, MaxValues, MaxAggregate, MaxBulk
// or MaxDepth is too large, not broken: the decoder skips the rest of it
// on the wire, from the header that breaks the limit, validating its lines
// but building no Values and buffering none of its strings (the Reader's
// buffer does not grow for the rest, and a skip keeps one count of the
// values still owed, however deep the nesting), and returns a Value of type TooLarge in its place. Its Err is
// a *ReplyTooLargeError (errors.Is ErrReplyTooLarge) that names the limit,
// its value, the size that broke it and how to raise it; the stream is in
// sync and the next reply decodes. A push frame is skipped the same way
// (ReplyTooLargeError.Type is Push). What cannot be skipped safely is a
// *ProtocolError (errors.Is ErrProtocol), after which the stream cannot
// be trusted: bytes that are not RESP, a line longer than MaxLine (a line
// is found by buffering it), and a length above the hard bounds
// HardMaxBulk (1 TiB) and HardMaxAggregate (2^32 elements), which no
// server sends: a header such as "$9999999999999" is refused, not
// waited for. Parse distinguishes "need more bytes" (ErrIncomplete) from
// "malformed" (*ProtocolError), and returns a TooLarge value for a
// complete reply over lim.
//
// # Errors
//
// A server error reply is a value, not a fault: Value.Err returns it as a
// *ServerError whose Msg is the server's text byte for byte, and whose Code
// is its first word (NOSCRIPT, MOVED, ASK, EMQKIND, …). A TooLarge value
// is an error value too (IsError; Err returns its *ReplyTooLargeError): the
// reply was skipped and the stream is healthy. A *ProtocolError means the
// stream is broken and the connection must be closed.
//
// # Encoding
//
// The Append functions write commands and values into a buffer the caller
// owns, like strconv.AppendInt; they allocate nothing when the buffer has
// room.
package resp
