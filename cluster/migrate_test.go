package cluster_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
)

// migrateSlot moves slot s from src to dst the way an operator does:
// IMPORTING on dst, MIGRATING on src, MIGRATE the keys a few at a time
// (pause lets the load run between batches), then SETSLOT NODE
// everywhere.
func migrateSlot(t *testing.T, c *servertest.Cluster, s int, src, dst *servertest.Server, pause func()) {
	t.Helper()
	require.NoError(t, c.MigrateSlot(s, src, dst, 20, pause))
}

// A live slot migration while 200,000 pipelined commands and a worker
// run on that slot: every reply is the right one, the ASK path (keys
// already moved, slot still migrating) and the MOVED path (after
// SETSLOT NODE) are both taken, and no job is lost.
func TestLiveMigration(t *testing.T) {
	c, err := servertest.StartCluster(3, 0, servertest.Options{})
	if err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer c.Stop()
	cl := newClient(t, c)
	ctx := testCtx(t)

	const tag = "m" // the slot that moves: keys {m}…, and queue "m"
	s := int(emq.Slot("{" + tag + "}"))
	src := owner(c, s)
	dst := c.Primaries[0]
	if dst == src {
		dst = c.Primaries[1]
	}

	// The worker's queue, pre-filled, and its log.
	q, err := emq.Open(ctx, cl, tag)
	require.NoError(t, err)
	ids := enqueueAll(t, ctx, q, 5000)
	log := &jobLog{runs: map[string]int{}}
	w, err := emq.NewWorker(q, log.handler(), emq.WorkerConfig{Concurrency: 16, Lease: 10 * time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start())

	// The pipelined load: INCRs over 100 keys of the slot; each reply
	// must be its key's previous value plus one.
	const batches, perBatch, keys = 200, 1000, 100
	progress := make(chan int, batches)
	loadErr := make(chan error, 1)
	var counts [keys]int64
	go func() {
		var b pipeline.Batch
		for i := range batches {
			b.Reset()
			for j := range perBatch {
				b.Add("INCR", "{"+tag+"}k"+strconv.Itoa((i*perBatch+j)%keys))
			}
			if err := b.Exec(ctx, cl); err != nil {
				loadErr <- err
				return
			}
			for j := range perBatch {
				k := (i*perBatch + j) % keys
				counts[k]++
				if v := b.Reply(j); v.Int != counts[k] {
					loadErr <- &wrongReply{i, j, v.String(), counts[k]}
					return
				}
			}
			progress <- i
		}
		loadErr <- nil
	}()
	// Migrate while the load runs: wait for some batches between steps.
	var seen int
	step := func() {
		select {
		case <-progress:
			seen++
		case err := <-loadErr:
			loadErr <- err
		case <-time.After(time.Millisecond):
		}
	}
	for seen < 20 {
		step()
	}
	migrateSlot(t, c, s, src, dst, step)
	require.NoError(t, <-loadErr)

	// The worker drains the moved queue.
	log.waitCount(len(ids), waitLong)
	require.NoError(t, w.Shutdown(ctx))
	missing, dups := log.missing(ids)
	require.Empty(t, missing, "jobs lost in the migration")
	st := cl.Stats()
	t.Logf("migration of slot %d under load: %+v; worker duplicates %d", s, st, dups)
	require.Positive(t, st.Ask, "the ASK path was not taken")
	require.Positive(t, st.Moved, "the MOVED path was not taken")
	for k := range keys {
		v, err := dst.Do("GET", "{"+tag+"}k"+strconv.Itoa(k))
		require.NoError(t, err)
		require.Equal(t, strconv.FormatInt(counts[k], 10), v)
	}
}

type wrongReply struct {
	batch, j int
	got      string
	want     int64
}

func (e *wrongReply) Error() string {
	return "batch " + strconv.Itoa(e.batch) + " reply " + strconv.Itoa(e.j) + ": got " + e.got + ", want " + strconv.FormatInt(e.want, 10)
}
