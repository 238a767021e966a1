package kv

import (
	"context"
	"iter"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// ScanOptions narrow a scan. The zero value visits everything, in
// batches of the server's default size.
type ScanOptions struct {
	// Match keeps the names that match a glob-style pattern (MATCH).
	// The server filters each batch after reading it: a narrow pattern
	// may come back with many empty batches.
	Match string
	// Count hints how many elements the server looks at per batch
	// (COUNT; default 10).
	Count int64
	// Type keeps the keys of one type ("string", "hash", "stream", …;
	// Scan only).
	Type string
}

// FieldValue is a field of a hash and its value.
type FieldValue struct {
	Field, Value string
}

// Scan iterates over the keys of the database (SCAN). It yields each
// key with a nil error, and a failure as the last pair. The server's
// guarantee: a key present for the whole scan is yielded at least once
// (maybe more: keep a set to drop repeats); one added or removed during
// it may be yielded or not.
//
//	for key, err := range kv.Scan(ctx, cl, kv.ScanOptions{Match: "user:*"}) {
//		if err != nil {
//			return err
//		}
//		…
//	}
//
// Over a cluster client (one with Primaries and Node, as
// cluster.Client has) it scans every primary in turn: each key once.
func Scan(ctx context.Context, s conn.Sender, o ScanOptions) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		nodes, err := scanNodes(ctx, s)
		if err != nil {
			yield("", err)
			return
		}
		for _, node := range nodes {
			stop := false
			scan(ctx, node, "SCAN", "", o, 1, func(e []resp.Value) bool {
				k, err := text(e[0])
				stop = !yield(k, err) || err != nil
				return !stop
			}, func(err error) { stop = true; yield("", err) })
			if stop {
				return
			}
		}
	}
}

// nodeLister is a sender spread over nodes: a cluster client.
type nodeLister interface {
	Primaries() []string
	Node(ctx context.Context, addr string) (*conn.Client, error)
}

// scanNodes returns the senders a SCAN must visit: s itself, or each
// primary of a cluster client.
func scanNodes(ctx context.Context, s conn.Sender) ([]conn.Sender, error) {
	nl, ok := s.(nodeLister)
	if !ok {
		return []conn.Sender{s}, nil
	}
	var out []conn.Sender
	for _, addr := range nl.Primaries() {
		c, err := nl.Node(ctx, addr)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// SScan iterates over the members of the set at key (SSCAN), as Scan
// does over keys.
func SScan(ctx context.Context, s conn.Sender, key string, o ScanOptions) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		scan(ctx, s, "SSCAN", key, o, 1, func(e []resp.Value) bool {
			m, err := text(e[0])
			return yield(m, err) && err == nil
		}, func(err error) { yield("", err) })
	}
}

// HScan iterates over the fields and values of the hash at key (HSCAN),
// as Scan does over keys.
func HScan(ctx context.Context, s conn.Sender, key string, o ScanOptions) iter.Seq2[FieldValue, error] {
	return func(yield func(FieldValue, error) bool) {
		scan(ctx, s, "HSCAN", key, o, 2, func(e []resp.Value) bool {
			f, err := text(e[0])
			var v string
			if err == nil {
				v, err = text(e[1])
			}
			return yield(FieldValue{f, v}, err) && err == nil
		}, func(err error) { yield(FieldValue{}, err) })
	}
}

// ZScan iterates over the members and scores of the sorted set at key
// (ZSCAN), as Scan does over keys.
func ZScan(ctx context.Context, s conn.Sender, key string, o ScanOptions) iter.Seq2[Z, error] {
	return func(yield func(Z, error) bool) {
		scan(ctx, s, "ZSCAN", key, o, 2, func(e []resp.Value) bool {
			m, err := text(e[0])
			var f float64
			if err == nil {
				f, err = e[1].AsFloat()
			}
			return yield(Z{Member: m, Score: f}, err) && err == nil
		}, func(err error) { yield(Z{}, err) })
	}
}

// scan runs the cursor loop of name over key (SCAN takes none; the
// others take theirs, which may be "", a valid key): each batch's
// elements are handed to each, width at a time, on the caller's
// goroutine while the reply is valid; each returns false to stop. A
// failure goes to fail.
func scan(ctx context.Context, s conn.Sender, name, key string, o ScanOptions, width int, each func([]resp.Value) bool, fail func(error)) {
	hasKey := name != "SCAN"
	if o.Type != "" && hasKey {
		fail(invalid(name + " with a TYPE"))
		return
	}
	cursor := []byte("0")
	for {
		b := builder()
		stopped := false
		err := do(ctx, s, b, scanCommand(b, name, key, argText(b, cursor), o), func(v resp.Value) error {
			if v.Type != resp.Array || len(v.Elems) != 2 || !isText(v.Elems[0]) ||
				v.Elems[1].Type != resp.Array && v.Elems[1].Type != resp.Set || len(v.Elems[1].Elems)%width != 0 {
				return &resp.TypeError{Want: "[cursor, elements]", Got: v.Type}
			}
			cursor = append(cursor[:0], v.Elems[0].Str...)
			e := v.Elems[1].Elems
			for i := 0; i < len(e); i += width {
				if !each(e[i : i+width]) {
					stopped = true
					return nil
				}
			}
			return nil
		})
		switch {
		case err != nil:
			fail(err)
			return
		case stopped || string(cursor) == "0":
			return
		}
	}
}

// scanCommand builds the command of one step of scan: name over key
// from cursor, with o's options.
func scanCommand(b *kb, name, key, cursor string, o ScanOptions) cmds.Command {
	switch name {
	case "HSCAN":
		return scanWith(b.Hscan(key, cursor), o)
	case "SSCAN":
		return scanWith(b.Sscan(key, cursor), o)
	case "ZSCAN":
		return scanWith(b.Zscan(key, cursor), o)
	}
	x := b.Scan(cursor)
	if o.Type != "" {
		x = x.Type(o.Type)
	}
	return scanWith(x, o)
}

// scanner is the builder value of a SCAN-family command.
type scanner[T any] interface {
	Match(pattern string) T
	Count(count int64) T
	Build() cmds.Command
}

// scanWith gives x the options every SCAN-family command takes and
// builds it.
func scanWith[T scanner[T]](x T, o ScanOptions) cmds.Command {
	if o.Match != "" {
		x = x.Match(o.Match)
	}
	if o.Count > 0 {
		x = x.Count(o.Count)
	}
	return x.Build()
}
