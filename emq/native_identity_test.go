package emq

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/internal/emqmodule"
	"github.com/echomq/echomq-go/internal/servertest"
)

// foreignModule builds testdata/foreignmod/foreign.c, a module that
// registers the eleven EMQ.* names under module name name at version ver,
// answers each call with 1 and stores nothing; it skips without a C
// compiler (fails under CI=true).
func foreignModule(t *testing.T, name string, ver int, flags ...string) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip("no C compiler: ", err)
	}
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "testdata", "foreignmod", "foreign.c")
	so := filepath.Join(t.TempDir(), "foreign.so")
	args := append([]string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared",
		`-DMODNAME="` + name + `"`, "-DMODVER=" + strconv.Itoa(ver), "-o", so, src}, flags...)
	out, err := exec.Command(cc, args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return so
}

// startWith starts a private server loading the module at so, stopped at
// the test's end; MODULE is enabled (Redis 7 has it off by default).
func startWith(t *testing.T, so string) *servertest.Server {
	t.Helper()
	servertest.Need(t, srv)
	s, err := emqmodule.Start(so, servertest.Options{Args: []string{"--enable-module-command", "yes"}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Stop() })
	return s
}

// A module of another name registering every EMQ.* command (answering 1,
// storing nothing), and the module "emq" at another version, are not the
// native module: auto picks the scripts, whose enqueue stores the job;
// ExecutorNative refuses to open, naming what differs. Before, auto picked
// the foreign commands by their names, and Enqueue returned an id and a
// nil error while nothing was stored.
func TestOpenRefusesForeignModule(t *testing.T) {
	for _, tc := range []struct {
		name string
		ver  int
		says string
	}{
		{"notemq", 1, `module "notemq"`},
		{"emq", 2, "version 2"},
	} {
		t.Run(tc.name+"-v"+strconv.Itoa(tc.ver), func(t *testing.T) {
			m := startWith(t, foreignModule(t, tc.name, tc.ver))
			ctx := tctx(t)
			c := dialAddr(t, m.Addr)

			q, err := Open(ctx, c, "foreign")
			require.NoError(t, err)
			id, err := q.Enqueue(ctx, []byte("kept"))
			require.NoError(t, err)
			v, err := m.Do("HGET", q.Keys().Job(id), "payload")
			require.NoError(t, err)
			require.Equal(t, "kept", v, "the acknowledged job is not stored")
			require.False(t, q.IsNative(), "auto trusted the foreign commands")
			require.Zero(t, calls(t, m, "emq.enqueue"), "the foreign command ran")

			missing, err := NativeMissing(ctx, c)
			require.NoError(t, err)
			require.Empty(t, missing, "the foreign module registers every name")
			err = CheckNative(ctx, c)
			require.ErrorIs(t, err, ErrNoNative)
			require.ErrorContains(t, err, tc.says)
			has, err := HasNative(ctx, c)
			require.NoError(t, err)
			require.False(t, has)

			_, err = Open(ctx, c, "foreign", WithExecutorChoice(ExecutorNative))
			require.ErrorIs(t, err, ErrNoNative)
			require.ErrorContains(t, err, tc.says)
		})
	}
}

// MODULE UNLOAD under open queues. Auto: the first call the server
// answers "unknown command" ran nothing, so it is sent again as a script
// and succeeds, and every later call goes as a script (a batch too: one
// whose every call was refused is sent again whole). ExecutorNative: each
// call fails with ErrNativeGone, stores nothing, and works again once the
// module is loaded again. Before, every verb failed with the raw
// "ERR unknown command" and nothing fell back.
func TestNativeUnload(t *testing.T) {
	so := emqmodule.Need(t, "")
	m := startWith(t, so)
	ctx := tctx(t)
	auto, err := Open(ctx, dialAddr(t, m.Addr), "gone-auto")
	require.NoError(t, err)
	autoBatch, err := Open(ctx, dialAddr(t, m.Addr), "gone-batch")
	require.NoError(t, err)
	native, err := Open(ctx, dialAddr(t, m.Addr), "gone-native", WithExecutorChoice(ExecutorNative))
	require.NoError(t, err)
	for _, q := range []*Queue{auto, autoBatch, native} {
		require.True(t, q.IsNative())
		_, err := q.Enqueue(ctx, []byte("before"))
		require.NoError(t, err)
	}
	pending := func(q *Queue) string {
		v, err := m.Do("ZCARD", q.Keys().Pending)
		require.NoError(t, err)
		return v
	}

	_, err = m.Do("MODULE", "UNLOAD", "emq")
	require.NoError(t, err)
	m.ResetStats(t)

	id, err := auto.Enqueue(ctx, []byte("after"))
	require.NoError(t, err, "the refused call was not sent again as a script")
	require.False(t, auto.IsNative())
	v, err := m.Do("HGET", auto.Keys().Job(id), "payload")
	require.NoError(t, err)
	require.Equal(t, "after", v)
	job, ok, err := auto.Claim(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, auto.Complete(ctx, job.ID, job.Token, 0))
	require.Equal(t, "1", pending(auto))
	require.Positive(t, calls(t, m, "evalsha"))

	res, err := autoBatch.EnqueueBatch(ctx, [][]byte{[]byte("a"), []byte("b"), []byte("c")})
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	require.Equal(t, "4", pending(autoBatch))
	require.False(t, autoBatch.IsNative())

	_, err = native.Enqueue(ctx, []byte("refused"))
	require.ErrorIs(t, err, ErrNativeGone)
	_, err = native.EnqueueBatch(ctx, [][]byte{[]byte("x"), []byte("y")})
	require.ErrorIs(t, err, ErrNativeGone)
	_, _, err = native.Claim(ctx, time.Minute)
	require.ErrorIs(t, err, ErrNativeGone)
	require.Equal(t, "1", pending(native), "a refused call stored something")

	_, err = m.Do("MODULE", "LOAD", so)
	require.NoError(t, err)
	_, err = native.Enqueue(ctx, []byte("back"))
	require.NoError(t, err)
	require.Equal(t, "2", pending(native))
	require.Positive(t, calls(t, m, "emq.enqueue"))
}

// A batch that an unload splits (its first call ran, a later one was
// refused as unknown) is not sent again, not even the refused part: it
// fails with ErrNativeGone, the replies stay in the batch, and later calls
// go as scripts. The split is made by a module that registers
// emq.enqueue alone.
func TestNativeSplitBatchNotResent(t *testing.T) {
	m := startWith(t, foreignModule(t, "half", 1, "-DMODCMDS=1"))
	ctx := tctx(t)
	c := dialAddr(t, m.Addr)
	x := &nativeExec{native: dispatch.NewNative(c), script: dispatch.NewScripted(c)}
	keys, err := NewKeys("split")
	require.NoError(t, err)
	var b dispatch.Batch
	var a dispatch.Args
	a.Key(keys.Job("JOB-x"))
	a.Key(keys.Pending)
	a.Arg("JOB-x")
	a.Arg("p")
	b.Add(scriptEnqueue, &a)
	a.Reset()
	a.Key(keys.Pending)
	a.Key(keys.Active)
	a.Key(keys.Base)
	a.Arg("60000")
	b.Add(scriptClaim, &a)
	m.ResetStats(t)
	err = x.EvalBatch(ctx, &b)
	require.ErrorIs(t, err, ErrNativeGone)
	require.Equal(t, int64(1), b.Reply(0).Int, "the call that ran keeps its reply")
	require.ErrorContains(t, b.Err(1), "unknown command")
	require.Zero(t, calls(t, m, "evalsha"), "a split batch was sent again")
	require.Zero(t, calls(t, m, "script|load"))

	require.NoError(t, x.EvalBatch(ctx, &b), "later calls go as scripts")
	require.Positive(t, calls(t, m, "evalsha"))
}

// The executor Open picks for the module costs no allocation of its own:
// Enqueue allocates its id alone, Complete nothing, as with the scripts.
func TestNativeAllocBudgets(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are not meaningful under -race or -short")
	}
	m := moduleServer(t)
	m.Flush(t)
	ctx := context.Background()
	q, err := Open(ctx, dialAddr(t, m.Addr), "native-allocs")
	require.NoError(t, err)
	require.True(t, q.IsNative())
	if _, err := q.EnqueueBulk(ctx, make([][]byte, 400)); err != nil {
		t.Fatal(err)
	}
	if got := testing.AllocsPerRun(200, func() {
		if _, err := q.Enqueue(ctx, []byte("p")); err != nil {
			t.Fatal(err)
		}
	}); got > 1 {
		t.Errorf("Enqueue: %.1f allocs per call, budget 1", got)
	}
	jobs, err := q.ClaimBatch(ctx, time.Minute, 300)
	require.NoError(t, err)
	require.Greater(t, len(jobs), 201)
	i := 0
	if got := testing.AllocsPerRun(200, func() {
		j := jobs[i]
		i++
		if err := q.Complete(ctx, j.ID, j.Token, 0); err != nil {
			t.Fatal(err)
		}
	}); got > 0 {
		t.Errorf("Complete: %.1f allocs per call, budget 0", got)
	}
}
