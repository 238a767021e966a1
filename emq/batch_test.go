package emq

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// evalFlags runs a script whose reply is {0|1, ...} with keys then args.
func evalFlags(t *testing.T, q *Queue, s *dispatch.Script, keys []string, args ...string) ([]bool, error) {
	t.Helper()
	o := getOp(s.Name())
	for _, k := range keys {
		o.args.Key(k)
	}
	for _, a := range args {
		o.args.Arg(a)
	}
	err := wrapErr(s.Name(), q.exec.Eval(tctx(t), s, &o.args, o.flagsFn))
	return o.flags, err
}

// TestBulkAcrossChunks moves 2,500 jobs (more than the 1,000 a script
// call or a ZADD/ZREM/DEL carries) through EnqueueBulk, one claim_batch
// and one complete_batch.
func TestBulkAcrossChunks(t *testing.T) {
	q := fresh(t, "bulk")
	ctx := tctx(t)
	const n = 2500
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = []byte(strconv.Itoa(i))
	}
	res, err := q.EnqueueBulk(ctx, payloads)
	if err != nil || len(res) != n {
		t.Fatalf("EnqueueBulk = %d, %v", len(res), err)
	}
	for i, r := range res {
		if r.Err != nil || (i > 0 && r.ID <= res[i-1].ID) {
			t.Fatalf("result %d %+v", i, r)
		}
	}
	if r := row(t, q, res[1234].ID); fmt.Sprint(r) != "map[attempts:0 payload:1234 state:pending]" {
		t.Fatalf("row %v", r)
	}
	if do(t, "ZCARD", q.keys.Pending) != strconv.Itoa(n) || score(t, q.keys.Pending, res[n-1].ID) != "0" {
		t.Fatal("pending wrong")
	}
	before := serverMillis(t)
	jobs, err := q.ClaimBatch(ctx, time.Minute, n+10)
	if err != nil || len(jobs) != n {
		t.Fatalf("ClaimBatch = %d, %v", len(jobs), err)
	}
	for i, j := range jobs {
		if j.ID != res[i].ID || string(j.Payload) != strconv.Itoa(i) || j.Token != 1 {
			t.Fatalf("job %d %+v", i, j)
		}
	}
	if do(t, "ZCARD", q.keys.Active) != strconv.Itoa(n) {
		t.Fatal("active wrong")
	}
	if dl := scoreInt(t, q.keys.Active, res[n-1].ID); dl < before+60000 || dl > serverMillis(t)+60000 {
		t.Fatalf("deadline %d", dl)
	}
	if r := row(t, q, res[2001].ID); r["state"] != "active" || r["attempts"] != "1" {
		t.Fatalf("row %v", r)
	}
	acks := make([]Ack, n)
	for i, j := range jobs {
		acks[i] = Ack{j.ID, j.Token}
	}
	done, err := q.CompleteBatch(ctx, acks, 0)
	if err != nil || len(done) != n {
		t.Fatalf("CompleteBatch = %d, %v", len(done), err)
	}
	for i, d := range done {
		if !d {
			t.Fatalf("job %d not completed", i)
		}
	}
	if do(t, "DBSIZE") != "1" {
		t.Fatalf("keys left: %s", do(t, "DBSIZE"))
	}
}

// TestClaimBatchMatchesClaim: the token continues from the row's attempts,
// exactly as claim's HINCRBY.
func TestClaimBatchMatchesClaim(t *testing.T) {
	q := fresh(t, "bulk")
	ctx := tctx(t)
	a, err := q.Enqueue(ctx, []byte("a"))
	require.NoError(t, err)
	b, err := q.Enqueue(ctx, []byte("b"))
	require.NoError(t, err)
	do(t, "HSET", q.keys.Job(a), "attempts", "3", "failures", "2")
	do(t, "HDEL", q.keys.Job(b), "attempts")
	jobs, err := q.ClaimBatch(ctx, time.Minute, 2)
	if err != nil || len(jobs) != 2 || jobs[0].Token != 4 || jobs[1].Token != 1 {
		t.Fatalf("ClaimBatch = %+v, %v", jobs, err)
	}
	if r := row(t, q, a); fmt.Sprint(r) != "map[attempts:4 failures:2 payload:a state:active]" {
		t.Fatalf("row %v", r)
	}
}

func TestBatchScriptsDuplicatesAndGates(t *testing.T) {
	q := fresh(t, "bulk")
	ctx := tctx(t)
	id1, id2 := "JOB0KHTOWnGLuC", "JOB0KHTOWnGLuD"
	// enqueue_batch: an id twice in one call is enqueued once.
	flags, err := evalFlags(t, q, scriptEnqueueBatch, []string{q.keys.Pending, q.keys.Base}, id1, "x", id2, "y", id1, "z")
	if err != nil || fmt.Sprint(flags) != "[true true false]" || row(t, q, id1)["payload"] != "x" {
		t.Fatalf("enqueue_batch = %v, %v", flags, err)
	}
	// With a row already there, each row is checked on its own.
	flags, err = evalFlags(t, q, scriptEnqueueBatch, []string{q.keys.Pending, q.keys.Base}, "JOB0KHTOWnGLuF", "w", id2, "v", "JOB0KHTOWnGLuF", "u")
	if err != nil || fmt.Sprint(flags) != "[true false false]" || row(t, q, id2)["payload"] != "y" || row(t, q, "JOB0KHTOWnGLuF")["payload"] != "w" {
		t.Fatalf("enqueue_batch over an existing row = %v, %v", flags, err)
	}
	do(t, "ZREM", q.keys.Pending, "JOB0KHTOWnGLuF")
	do(t, "DEL", q.keys.Job("JOB0KHTOWnGLuF"))
	// The kind gate refuses the whole call before writing anything.
	_, err = evalFlags(t, q, scriptEnqueueBatch, []string{q.keys.Pending, q.keys.Base}, "JOB0KHTOWnGLuE", "x", "QTE0KHTOWnGLuC", "y")
	if err == nil || err.Error() != "EMQKIND job id must be JOB-namespaced" || !errors.Is(err, ErrKind) {
		t.Fatalf("enqueue_batch with a QTE id: %v", err)
	}
	if do(t, "EXISTS", q.keys.Job("JOB0KHTOWnGLuE")) != "0" {
		t.Fatal("enqueue_batch wrote before refusing")
	}
	_, err = evalFlags(t, q, scriptEnqueueBatch, []string{q.keys.Pending, q.keys.Base}, id1)
	if !errors.Is(err, ErrArg) || err.Error() != "EMQARG ids and payloads must come in pairs" {
		t.Fatalf("odd ARGV: %v", err)
	}

	jobs, err := q.ClaimBatch(ctx, time.Minute, 2)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	tok := strconv.FormatInt(jobs[0].Token, 10)
	// complete_batch: an id twice completes once, as two completes would.
	flags, err = evalFlags(t, q, scriptCompleteBatch, []string{q.keys.Active, q.keys.Base}, "60000", id1, tok, id1, tok)
	if err != nil || fmt.Sprint(flags) != "[true false]" {
		t.Fatalf("complete_batch = %v, %v", flags, err)
	}
	if r := row(t, q, id1); r["state"] != "completed" || score(t, q.keys.Active, id1) != "" {
		t.Fatalf("row %v", r)
	}
	_, err = evalFlags(t, q, scriptCompleteBatch, []string{q.keys.Active, q.keys.Base}, "-1", id2, tok)
	var se *resp.ServerError
	if !errors.As(err, &se) || se.Msg != "EMQARG retention_ms must be an integer >= 0" {
		t.Fatalf("negative retention: %v", err)
	}
	if r := row(t, q, id2); r["state"] != "active" {
		t.Fatalf("refused call wrote: %v", r)
	}
}
