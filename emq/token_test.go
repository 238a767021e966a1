package emq

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// evalRaw runs s with keys and args given as text, as a peer in another
// language could send them, and returns the reply.
func evalRaw(t *testing.T, q *Queue, s *dispatch.Script, keys []string, args ...string) resp.Value {
	t.Helper()
	var a dispatch.Args
	for _, k := range keys {
		a.Key(k)
	}
	for _, v := range args {
		a.Arg(v)
	}
	var out resp.Value
	err := q.exec.Eval(tctx(t), s, &a, func(v resp.Value) error { out = v.Clone(); return nil })
	require.NoError(t, err, "%s %q", s.Name(), args)
	return out
}

// TestTokenIsExactDecimalText: complete, retry, extend and complete_batch
// compare the token with the stored attempts as exact decimal text. Other
// spellings of the same number ("01", "1.0", " 1", "1e0", ...) are stale:
// 0, and nothing written. "1" holds.
func TestTokenIsExactDecimalText(t *testing.T) {
	q := fresh(t, "token")
	ctx := tctx(t)
	id, err := q.Enqueue(ctx, []byte("x"))
	require.NoError(t, err)
	job, ok, err := q.Claim(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 1, job.Token)

	k := q.keys
	rowKey := k.Job(id)
	stale := []string{"01", "1.0", " 1", "1e0", "+1", "1 ", "0x1", "1.", "0001", "1\x00", "\t1", ""}
	for _, tok := range stale {
		v := evalRaw(t, q, scriptComplete, []string{k.Active, rowKey}, id, tok, "0")
		require.Equal(t, "0", v.String(), "complete with token %q", tok)
		v = evalRaw(t, q, scriptRetry, []string{k.Active, rowKey, k.Pending, k.Delayed, k.Dead}, id, tok, "0", "5", "boom")
		require.Equal(t, "0", v.String(), "retry with token %q", tok)
		v = evalRaw(t, q, scriptExtend, []string{k.Active, rowKey}, id, tok, "60000")
		require.Equal(t, "0", v.String(), "extend with token %q", tok)
		v = evalRaw(t, q, scriptCompleteBatch, []string{k.Active, k.Base}, "0", id, tok)
		require.Equal(t, "[0]", v.String(), "complete_batch with token %q", tok)
		r := row(t, q, id)
		require.Equal(t, "active", r["state"], "token %q wrote the row", tok)
		require.Equal(t, "1", r["attempts"])
		require.NotContains(t, r, "error")
		require.NotEmpty(t, score(t, k.Active, id))
	}

	// The exact text holds, for each script.
	v := evalRaw(t, q, scriptExtend, []string{k.Active, rowKey}, id, "1", "60000")
	require.Equal(t, "1", v.String(), "extend with token \"1\"")
	v = evalRaw(t, q, scriptRetry, []string{k.Active, rowKey, k.Pending, k.Delayed, k.Dead}, id, "1", "0", "5", "boom")
	require.Equal(t, "1", v.String(), "retry with token \"1\"")
	job, ok, err = q.Claim(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 2, job.Token)
	v = evalRaw(t, q, scriptCompleteBatch, []string{k.Active, k.Base}, "0", id, "02", id, "2")
	require.Equal(t, "[0 1]", v.String(), "complete_batch with tokens \"02\" then \"2\"")
	require.Equal(t, "0", do(t, "EXISTS", rowKey))

	id, err = q.Enqueue(ctx, nil)
	require.NoError(t, err)
	_, ok, err = q.Claim(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	v = evalRaw(t, q, scriptComplete, []string{k.Active, k.Job(id)}, id, "1", "0")
	require.Equal(t, "1", v.String(), "complete with token \"1\"")
	require.Equal(t, "0", do(t, "EXISTS", k.Job(id)))
}

// TestParseToken: the Go side reads a claim's attempts by the same rule:
// an integer reply, or the exact decimal text of one, at least 1.
func TestParseToken(t *testing.T) {
	for _, n := range []int64{1, 2, 25, 9007199254740991} {
		got, ok := parseToken(resp.Value{Type: resp.Integer, Int: n})
		require.True(t, ok)
		require.Equal(t, n, got)
		got, ok = parseToken(resp.Value{Type: resp.BulkString, Str: []byte(strconv.FormatInt(n, 10))})
		require.True(t, ok)
		require.Equal(t, n, got)
	}
	for _, s := range []string{"01", "1.0", " 1", "1e0", "+1", "-0", "0", "-1", "", "1 "} {
		_, ok := parseToken(resp.Value{Type: resp.BulkString, Str: []byte(s)})
		require.False(t, ok, "token %q", s)
	}
	for _, n := range []int64{0, -1} {
		_, ok := parseToken(resp.Value{Type: resp.Integer, Int: n})
		require.False(t, ok, "token %d", n)
	}
	_, err := appendJobs(nil, "claim", resp.Value{Type: resp.Array, Elems: []resp.Value{
		{Type: resp.BulkString, Str: []byte("JOB00000000001")},
		{Type: resp.BulkString, Str: []byte("p")},
		{Type: resp.BulkString, Str: []byte("01")},
	}})
	var re *ReplyError
	require.ErrorAs(t, err, &re)
}
