package jobs

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
)

// serverCPU is the server's CPU time so far (INFO cpu: used_cpu_sys +
// used_cpu_user).
func serverCPU(b *testing.B, c conn.Sender) time.Duration {
	v, err := c.Do(context.Background(), "INFO", "cpu")
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(string(v.Str), "\n") {
		k, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(val, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// evalUsec is the server's time in EVALSHA so far (INFO commandstats).
func evalUsec(b *testing.B, c conn.Sender) int64 {
	v, err := c.Do(context.Background(), "INFO", "commandstats")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(v.Str), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:"); ok {
			for _, f := range strings.Split(rest, ",") {
				if u, ok := strings.CutPrefix(f, "usec="); ok {
					n, _ := strconv.ParseInt(u, 10, 64)
					return n
				}
			}
		}
	}
	return 0
}

// BenchmarkEnqueueBulk: one op is one task enqueued by Client.EnqueueBulk
// in calls of 100, plain or each under a unique key of its own (all free:
// every one enqueued, the unique script's full path). Compare the two in
// one run (-count); srv-ns/op is the server's CPU per task (INFO cpu),
// script-ns/op its time in the scripts (INFO commandstats, EVALSHA).
//
//	go test -run '^$' -bench EnqueueBulk -count 6 ./jobs/
func BenchmarkEnqueueBulk(b *testing.B) {
	for _, mode := range []string{"plain", "unique"} {
		b.Run(mode, func(b *testing.B) {
			c := fresh(b)
			cl := newClient(b, c)
			ctx := context.Background()
			const chunk = 100
			tasks := make([]*Task, chunk)
			for i := range tasks {
				tasks[i] = NewTask("bench:enqueue", make([]byte, 16))
			}
			var opts []Option
			next := 0
			if mode == "unique" {
				keys := make([]string, chunk)
				opts = append(opts, UniqueKeyFunc(func(t *Task) string {
					for i := range tasks {
						if tasks[i] == t {
							return keys[i]
						}
					}
					return ""
				}))
				fillKeys := func() {
					for i := range keys {
						keys[i] = "k" + strconv.Itoa(next)
						next++
					}
				}
				fillKeys()
				opts = append(opts, func(*enqueueOpts) { fillKeys() })
			}
			cpu0, eval0 := serverCPU(b, c), evalUsec(b, c)
			b.ResetTimer()
			for done := 0; done < b.N; done += chunk {
				n := min(chunk, b.N-done)
				_, errs, err := cl.EnqueueBulk(ctx, tasks[:n], opts...)
				if err != nil || errs != nil {
					b.Fatal(err, errs)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(serverCPU(b, c)-cpu0)/float64(b.N), "srv-ns/op")
			b.ReportMetric(float64(evalUsec(b, c)-eval0)*1000/float64(b.N), "script-ns/op")
		})
	}
}
