package kv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/kv"
)

func TestStreams(t *testing.T) {
	entry := func(id string, kv ...string) []string { return append([]string{"XADD", "st", id}, kv...) }
	group := []string{"XGROUP", "CREATE", "st", "g", "0", "MKSTREAM"}
	runTable(t, []tcase{
		{name: "XAdd", call: func(ctx context.Context, s conn.Sender) (any, error) {
			id, err := kv.XAdd(ctx, s, "st", "type", "click", "n", "1")
			return strings.Count(id, "-") == 1, err
		}, want: true, after: [][2]string{{"XLEN st", "1"}}},
		{name: "XAddWith an id, MaxLen and bytes", setup: [][]string{entry("1-1", "a", "1"), entry("1-2", "a", "2")}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			id, ok, err := kv.XAddWith(ctx, s, "st", kv.XAddOptions{ID: "5-0", MaxLen: 2}, []byte("f"), []byte("\x00"))
			return pair{id, ok}, err
		}, want: pair{"5-0", true}, after: [][2]string{{"XLEN st", "2"}}},
		{name: "XAddWith NoMkStream", call: func(ctx context.Context, s conn.Sender) (any, error) {
			id, ok, err := kv.XAddWith(ctx, s, "st", kv.XAddOptions{NoMkStream: true, MaxLen: 10, Approx: true}, "a", "1")
			return pair{id, ok}, err
		}, want: pair{"", false}, after: [][2]string{{"EXISTS st", "0"}}},
		{name: "XAdd of an odd number", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XAdd(ctx, s, "st", "a")
		}, err: isInvalid},
		{name: "XLen of a missing stream", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XLen(ctx, s, "st")
		}, want: int64(0)},
		{name: "XGroupCreate makes the stream", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XGroupCreate(ctx, s, "st", "g", "$")
		}, want: true, after: [][2]string{{"TYPE st", "stream"}}},
		{name: "XGroupCreate of an existing group", setup: [][]string{{"XGROUP", "CREATE", "st", "g", "$", "MKSTREAM"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XGroupCreate(ctx, s, "st", "g", "$")
		}, want: false},
		{name: "XReadGroup new entries", setup: [][]string{entry("1-1", "a", "1"), entry("1-2", "b", "2", "c", "3"), group}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XReadGroup(ctx, s, kv.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{"st"}, Count: 10})
		}, want: []kv.XStream{{Key: "st", Entries: []kv.XEntry{
			{ID: "1-1", Fields: []cmds.FieldValue{{Field: "a", Value: "1"}}},
			{ID: "1-2", Fields: []cmds.FieldValue{{Field: "b", Value: "2"}, {Field: "c", Value: "3"}}},
		}}}, after: [][2]string{{"XPENDING st g", "2\n1-1\n1-2\nc1\n2"}}},
		{name: "XReadGroup of nothing new", setup: [][]string{group}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XReadGroup(ctx, s, kv.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{"st"}})
		}, want: []kv.XStream(nil)},
		{name: "XReadGroup blocks, then times out", setup: [][]string{group}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XReadGroup(ctx, s, kv.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{"st"}, Block: 50 * time.Millisecond})
		}, want: []kv.XStream(nil)},
		{name: "XReadGroup of pending, one deleted, NoAck", setup: [][]string{
			entry("1-1", "a", "1"), entry("1-2", "b", "2"), group,
			{"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "st", ">"}, {"XDEL", "st", "1-1"},
		}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XReadGroup(ctx, s, kv.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{"st"}, IDs: []string{"0"}, NoAck: true})
		}, want: []kv.XStream{{Key: "st", Entries: []kv.XEntry{{ID: "1-1"}, {ID: "1-2", Fields: []cmds.FieldValue{{Field: "b", Value: "2"}}}}}}},
		// A negative Block other than BlockForever (a deadline computed
		// in the past, say) is refused before sending: BLOCK 0 would wait
		// for ever. Nothing is read, so the entry stays undelivered.
		{name: "XReadGroup with a negative Block", setup: [][]string{entry("1-1", "a", "1"), group}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XReadGroup(ctx, s, kv.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{"st"}, Block: -time.Second})
		}, err: isInvalid, after: [][2]string{{"XPENDING st g", "0\n\n\n"}}},
		{name: "XReadGroup with a negative Block, nothing to read", setup: [][]string{group}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XReadGroup(ctx, s, kv.XReadGroupArgs{Group: "g", Consumer: "c1", Streams: []string{"st"}, Block: -2 * time.Millisecond})
		}, err: isInvalid},
		{name: "XReadGroup without streams", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XReadGroup(ctx, s, kv.XReadGroupArgs{Group: "g", Consumer: "c"})
		}, err: isInvalid},
		{name: "XAck", setup: [][]string{entry("1-1", "a", "1"), entry("1-2", "a", "2"), group, {"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "st", ">"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XAck(ctx, s, "st", "g", "1-1", "9-9")
		}, want: int64(1), after: [][2]string{{"XPENDING st g", "1\n1-2\n1-2\nc1\n1"}}},
		{name: "XAutoClaim", setup: [][]string{
			entry("1-1", "a", "1"), entry("1-2", "a", "2"), entry("1-3", "a", "3"), group,
			{"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "st", ">"}, {"XDEL", "st", "1-2"},
		}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XAutoClaim(ctx, s, kv.XAutoClaimArgs{Stream: "st", Group: "g", Consumer: "c2", Count: 10})
		}, want: kv.XAutoClaimResult{Next: "0-0", Entries: []kv.XEntry{
			{ID: "1-1", Fields: []cmds.FieldValue{{Field: "a", Value: "1"}}},
			{ID: "1-3", Fields: []cmds.FieldValue{{Field: "a", Value: "3"}}},
		}, Deleted: []string{"1-2"}}},
		{name: "XAutoClaim of entries not idle long enough", setup: [][]string{
			entry("1-1", "a", "1"), group, {"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "st", ">"},
		}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XAutoClaim(ctx, s, kv.XAutoClaimArgs{Stream: "st", Group: "g", Consumer: "c2", MinIdle: time.Hour})
		}, want: kv.XAutoClaimResult{Next: "0-0", Entries: []kv.XEntry{}, Deleted: []string{}}},
	})
}

// A blocking XReadGroup on a Client runs on a connection of its own: the
// shared connection answers meanwhile, and an entry added while it waits
// is read.
func TestXReadGroupBlockingOnClient(t *testing.T) {
	for _, tg := range targets(t) {
		if !strings.HasSuffix(tg.name, "Client") {
			continue
		}
		t.Run(tg.name, func(t *testing.T) {
			tg.server.Flush(t)
			ctx := testCtx(t)
			_, err := kv.XGroupCreate(ctx, tg.sender, "jobs", "workers", "$")
			require.NoError(t, err)
			read := make(chan []kv.XStream, 1)
			go func() {
				st, err := kv.XReadGroup(ctx, tg.sender, kv.XReadGroupArgs{
					Group: "workers", Consumer: "w1", Streams: []string{"jobs"}, Block: kv.BlockForever,
				})
				if err != nil {
					st = []kv.XStream{{Key: err.Error()}}
				}
				read <- st
			}()
			require.Eventually(t, func() bool {
				info, err := tg.server.Do("INFO", "clients")
				return err == nil && strings.Contains(info, "blocked_clients:1")
			}, waitLong, time.Millisecond)
			for range 10 {
				n, err := kv.Incr(ctx, tg.sender, "free")
				require.NoError(t, err)
				require.Positive(t, n)
			}
			id, err := kv.XAdd(ctx, tg.sender, "jobs", "task", "resize")
			require.NoError(t, err)
			st := <-read
			require.Equal(t, []kv.XStream{{Key: "jobs", Entries: []kv.XEntry{{ID: id, Fields: []cmds.FieldValue{{Field: "task", Value: "resize"}}}}}}, st)
		})
	}
}
