package cliredact

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedact(t *testing.T) {
	args := []string{"-url=redis://bob:s3cret-pw@h:1", "-n", "5", "ping", "rediss://:tiny@h", "x@y"}
	for _, c := range []struct{ in, want string }{
		{`bad "-url=redis://bob:s3cret-pw@h:1"`, "bad " + NotShown},
		{"value redis://bob:s3cret-pw@h:1 here", "value " + NotShown + " here"},
		{"the password s3cret-pw alone", "the password " + NotShown + " alone"},
		{`got "x@y" and "rediss://:tiny@h"`, "got " + NotShown + " and " + NotShown},
		{"tiny passwords stay: tiny, and so does 5 or ping", "tiny passwords stay: tiny, and so does 5 or ping"},
	} {
		require.Equal(t, c.want, Redact(c.in, args), c.in)
	}
}

func TestQuoteAndHint(t *testing.T) {
	require.Equal(t, `"orders"`, Quote("orders"))
	require.Equal(t, NotShown, Quote("redis://:pw@h"))
	require.Equal(t, NotShown, Quote("pw@h"))
	require.Empty(t, URLHint("orders", "stats"))
	require.Contains(t, URLHint("orders", "redis://h"), "-url")
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := Writer{W: &b, Args: []string{"-url", "redis://:Hunter2pw@h"}}
	fmt.Fprintf(w, "cannot reach %s (password Hunter2pw)\n", "redis://:Hunter2pw@h")
	require.Equal(t, "cannot reach "+NotShown+" (password "+NotShown+")\n", b.String())
}
