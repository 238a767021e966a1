package pipeline_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/pipeline"
)

// BenchmarkTypedRaw is typed against raw as the peer run's echomq and
// echomq-typed clients do it (bench/peers): a Batch of depth 100 built
// again for every Exec, every reply checked. raw: Add and the replies'
// resp.Values; typed: the Batch's Builder, a handle per command (Status
// for PING, OK for SET, Int for EVALSHA) and its Value.
// One op is one command; cpu-s/Mop is the client's CPU (the server is
// another process), so typed ÷ raw is read from it:
//
//	go test -run '^$' -bench TypedRaw -count 6 ./pipeline/ | tee tr.txt; benchstat -col /via tr.txt
func BenchmarkTypedRaw(b *testing.B) {
	const depth = 100
	payload := strings.Repeat("v", 64)
	for _, name := range []string{"PING", "SET64", "EVALSHA"} {
		for _, via := range []string{"raw", "typed"} {
			b.Run("cmd="+name+"/via="+via, func(b *testing.B) {
				c := benchConn(b)
				ctx := context.Background()
				var batch pipeline.Batch
				sha := loadScript(b, c, "return 1")
				status := make([]pipeline.Reply[string], 0, depth)
				oks := make([]pipeline.Reply[bool], 0, depth)
				ints := make([]pipeline.Reply[int64], 0, depth)
				key := make([]byte, 0, 40)
				op := 0
				round := func() {
					batch.Reset()
					status, oks, ints = status[:0], oks[:0], ints[:0]
					var cb *cmds.Builder
					if via == "typed" {
						cb = batch.Builder() // as the peer run's raw client, raw asks for none
					}
					for range depth {
						switch {
						case name == "PING" && via == "raw":
							batch.Add("PING")
						case name == "PING":
							status = append(status, batch.Status(cb.Ping().Build()))
						case name == "SET64" && via == "raw":
							batch.Add("SET", "key:bench", payload)
						case name == "SET64":
							oks = append(oks, batch.OK(cb.Set("key:bench", payload).Build()))
						default:
							key = strconv.AppendInt(append(key[:0], "emq:{b}:job:JOB"...), int64(op), 10)
							op++
							k := string(key)
							if via == "raw" {
								batch.Add("EVALSHA", sha, "2", k, "emq:{b}:pending", k[12:], payload)
							} else {
								ints = append(ints, batch.Int(cb.Evalsha(sha, k, "emq:{b}:pending").Arg(k[12:], payload).Build()))
							}
						}
					}
					if err := batch.Exec(ctx, c); err != nil {
						b.Fatal(err)
					}
					if via == "raw" {
						for _, v := range batch.Replies() {
							switch name {
							case "PING":
								if !v.Equal("PONG") {
									b.Fatal(v)
								}
							case "SET64":
								if !v.Equal("OK") {
									b.Fatal(v)
								}
							default:
								if n, err := v.AsInt(); err != nil || n != 1 {
									b.Fatal(v)
								}
							}
						}
						return
					}
					for _, h := range status {
						if v, err := h.Value(); err != nil || v != "PONG" {
							b.Fatal(v, err)
						}
					}
					for _, h := range oks {
						if v, err := h.Value(); err != nil || !v {
							b.Fatal(v, err)
						}
					}
					for _, h := range ints {
						if v, err := h.Value(); err != nil || v != 1 {
							b.Fatal(v, err)
						}
					}
				}
				rounds(b, depth, round)
			})
		}
	}
}

// BenchmarkTypedAdd is BenchmarkTypedRaw's queueing alone, without the
// round trip: Add against the Batch's Builder and a typed handle, on a
// Batch last sent to a *conn.Conn (which reads no facts), as in the peer
// run. CPU only: cpu-ns/op is the process's CPU per command.
//
//	go test -run '^$' -bench TypedAdd -count 6 ./pipeline/ | tee ta.txt; benchstat -col /via ta.txt
func BenchmarkTypedAdd(b *testing.B) {
	payload := strings.Repeat("v", 64)
	sha, jobKey := strings.Repeat("0", 40), "emq:{b}:job:JOB12345678901"
	var batch, rawBatch pipeline.Batch // rawBatch: no Builder asked for, as the raw client
	cb := batch.Builder()
	var st pipeline.Reply[string]
	var ok pipeline.Reply[bool]
	var n pipeline.Reply[int64]
	for _, c := range []struct {
		name string
		add  func()
	}{
		{"cmd=PING/via=raw", func() { rawBatch.Add("PING") }},
		{"cmd=PING/via=typed", func() { st = batch.Status(cb.Ping().Build()) }},
		{"cmd=SET64/via=raw", func() { rawBatch.Add("SET", "key:bench", payload) }},
		{"cmd=SET64/via=typed", func() { ok = batch.OK(cb.Set("key:bench", payload).Build()) }},
		{"cmd=EVALSHA/via=raw", func() { rawBatch.Add("EVALSHA", sha, "2", jobKey, "emq:{b}:pending", jobKey[12:], payload) }},
		{"cmd=EVALSHA/via=typed", func() {
			n = batch.Int(cb.Evalsha(sha, jobKey, "emq:{b}:pending").Arg(jobKey[12:], payload).Build())
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			bt := &batch
			if strings.HasSuffix(c.name, "raw") {
				bt = &rawBatch
			}
			bt.Reset()
			bt.Add("PING")
			if err := bt.Exec(context.Background(), benchConn(b)); err != nil {
				b.Fatal(err)
			}
			bt.Reset()
			adds(b, bt, c.add)
		})
	}
	_, _, _ = st, ok, n
}
