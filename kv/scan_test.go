package kv_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/kv"
)

// collect ranges over a scan, dropping the repeats SCAN may yield.
func collect[T comparable](seq func(func(T, error) bool)) ([]T, error) {
	seen := map[T]bool{}
	var out []T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out, nil
}

// fill is setup that makes a key of each type and 50 hash fields, set
// members and sorted-set members, over several SCAN batches.
func fill() [][]string {
	var cmds [][]string
	for i := range 50 {
		n := strconv.Itoa(i)
		cmds = append(cmds, []string{"SET", "user:" + n, n}, []string{"HSET", "h", "f" + n, n},
			[]string{"SADD", "s", "m" + n}, []string{"ZADD", "z", n, "m" + n})
	}
	return append(cmds, []string{"SET", "other", "x"})
}

func TestScan(t *testing.T) {
	sorted := func(s []string, err error) (any, error) {
		slices.Sort(s)
		return s, err
	}
	var users, fields, members []string
	var zs []kv.Z
	for i := range 50 {
		n := strconv.Itoa(i)
		users = append(users, "user:"+n)
		fields = append(fields, "f"+n+"="+n)
		members = append(members, "m"+n)
		zs = append(zs, kv.Z{Member: "m" + n, Score: float64(i)})
	}
	slices.Sort(users)
	slices.Sort(fields)
	slices.Sort(members)
	runTable(t, []tcase{
		{name: "Scan with Match, over many batches", setup: fill(), call: func(ctx context.Context, s conn.Sender) (any, error) {
			return sorted(collect(kv.Scan(ctx, s, kv.ScanOptions{Match: "user:*", Count: 7})))
		}, want: users},
		{name: "Scan by Type", setup: fill(), call: func(ctx context.Context, s conn.Sender) (any, error) {
			return sorted(collect(kv.Scan(ctx, s, kv.ScanOptions{Type: "zset"})))
		}, want: []string{"z"}},
		{name: "Scan of an empty database", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return collect(kv.Scan(ctx, s, kv.ScanOptions{}))
		}, want: []string(nil)},
		{name: "Scan stops at break", setup: fill(), call: func(ctx context.Context, s conn.Sender) (any, error) {
			n := 0
			for _, err := range kv.Scan(ctx, s, kv.ScanOptions{Count: 5}) {
				if err != nil {
					return n, err
				}
				if n++; n == 3 {
					break
				}
			}
			return n, nil
		}, want: 3},
		{name: "HScan", setup: fill(), call: func(ctx context.Context, s conn.Sender) (any, error) {
			fv, err := collect(kv.HScan(ctx, s, "h", kv.ScanOptions{Count: 10}))
			var out []string
			for _, p := range fv {
				out = append(out, p.Field+"="+p.Value)
			}
			return sorted(out, err)
		}, want: fields},
		{name: "SScan", setup: fill(), call: func(ctx context.Context, s conn.Sender) (any, error) {
			return sorted(collect(kv.SScan(ctx, s, "s", kv.ScanOptions{})))
		}, want: members},
		{name: "ZScan", setup: fill(), call: func(ctx context.Context, s conn.Sender) (any, error) {
			z, err := collect(kv.ZScan(ctx, s, "z", kv.ScanOptions{}))
			slices.SortFunc(z, func(a, b kv.Z) int { return int(a.Score - b.Score) })
			return z, err
		}, want: zs},
		{name: "HScan of a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return collect(kv.HScan(ctx, s, "h", kv.ScanOptions{}))
		}, want: []kv.FieldValue(nil)},
		{name: "SScan of a string", setup: [][]string{{"SET", "s", "x"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return collect(kv.SScan(ctx, s, "s", kv.ScanOptions{}))
		}, err: isWrongType},
		{name: "SScan with a Type", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return collect(kv.SScan(ctx, s, "s", kv.ScanOptions{Type: "set"}))
		}, err: isInvalid},
		// The empty key is a key like any other: HSCAN "" 0, never
		// HSCAN 0 (which would scan the key "0", or be refused).
		{name: "HScan of the empty key", setup: [][]string{{"HSET", "", "f", "v"}, {"HSET", "0", "g", "w"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return collect(kv.HScan(ctx, s, "", kv.ScanOptions{}))
		}, want: []kv.FieldValue{{Field: "f", Value: "v"}}},
		{name: "SScan of the empty key", setup: [][]string{{"SADD", "", "m"}, {"SADD", "0", "n"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return collect(kv.SScan(ctx, s, "", kv.ScanOptions{Match: "*"}))
		}, want: []string{"m"}},
		{name: "ZScan of the empty key", setup: [][]string{{"ZADD", "", "2", "m"}, {"ZADD", "0", "3", "n"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return collect(kv.ZScan(ctx, s, "", kv.ScanOptions{Count: 5}))
		}, want: []kv.Z{{Member: "m", Score: 2}}},
		{name: "HScan of the empty key, missing", setup: [][]string{{"SET", "x", "1"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return collect(kv.HScan(ctx, s, "", kv.ScanOptions{}))
		}, want: []kv.FieldValue(nil)},
		{name: "SScan of the empty key with a Type", setup: [][]string{{"SADD", "", "m"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return collect(kv.SScan(ctx, s, "", kv.ScanOptions{Type: "set"}))
		}, err: isInvalid},
	})
}
