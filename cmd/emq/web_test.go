package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWebServes: emq web serves the dashboard under its prefix for the
// queues of -queues, with the URL given as the argument, and stops when
// its context ends.
func TestWebServes(t *testing.T) {
	q := queue(t)
	_, err := q.Enqueue(context.Background(), []byte("x"))
	require.NoError(t, err)
	cfg, err := parseWebArgs([]string{"-addr", "127.0.0.1:0", "-queues", "ops", "-prefix", "/emq", "redis://" + srv.Addr}, io.Discard)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() { done <- serveWeb(ctx, cfg, &out, &errb, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	res, err := http.Get("http://" + addr + "/emq/api/overview")
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Contains(t, string(b), `"name":"ops","pending":1`)
	cancel()
	require.Equal(t, exitOK, <-done, errb.String())
	require.Contains(t, out.String(), "serving http://"+addr+"/emq/")
}

func TestWebArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-queues", "a{b"}, "-queues"},
		{[]string{"-registry=false"}, "needs -queues"},
		{[]string{"redis://a", "redis://b"}, "one URL"},
		{[]string{"-url", "redis://a", "redis://b"}, "not both"},
		{[]string{"-nope"}, "not defined"},
	} {
		_, err := parseWebArgs(c.args, io.Discard)
		require.ErrorContains(t, err, c.want, "%v", c.args)
	}
	code, _, errs := runArgs("web", "-url", "redis://user:secret@127.0.0.1:1", "-bogus")
	require.Equal(t, exitUsage, code)
	require.NotContains(t, errs, "secret")
	code, out, _ := runArgs("web", "-h")
	require.Equal(t, exitOK, code)
	require.True(t, strings.HasPrefix(out, "usage: emq web"))
}
