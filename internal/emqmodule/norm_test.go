package emqmodule

import (
	"regexp"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/resp"
	"github.com/stretchr/testify/require"
)

// scriptTrailer is what a script's error reply adds to the error of the
// redis.call that raised it: the script's SHA and its line.
var scriptTrailer = regexp.MustCompile(` script: [0-9a-f]{40}, on @user_script:\d+\.$`)

// aclTexts are the ACL refusals of a key: a script's redis.call on Redis
// 7.0 and on Valkey 8 (both with an ERR code), and a command's on each
// (NOPERM), which the module answers.
var aclTexts = []string{
	"ERR The user executing the script can't access at least one of the keys mentioned in the command arguments",
	"ERR ACL failure in script: No permissions to access a key",
	"NOPERM this user has no permissions to access one of the keys used as arguments",
	"NOPERM No permissions to access a key",
}

// norm renders v as render does, an error as the module answers it: a
// script's without its trailer, an ACL refusal of a key as NOPERM (the
// difference module/README.md states).
func norm(v resp.Value) string {
	return render(normValue(v))
}

func normValue(v resp.Value) resp.Value {
	switch v.Type {
	case resp.Error, resp.BulkError:
		s := scriptTrailer.ReplaceAllString(string(v.Str), "")
		for _, a := range aclTexts {
			if s == a {
				s = "NOPERM"
			}
		}
		v.Str = []byte(s)
	case resp.Array, resp.Set, resp.Push:
		el := make([]resp.Value, len(v.Elems))
		for i, e := range v.Elems {
			el[i] = normValue(e)
		}
		v.Elems = el
	}
	return v
}

// bothN runs st on both executors (the script by EVALSHA, the module
// natively) and requires equal normalized replies, and st.want when set.
func bothN(t *testing.T, scr, nat *side, st step) string {
	t.Helper()
	a := norm(scr.run(t, false, st.name, st.keys, st.args))
	b := norm(nat.run(t, true, st.name, st.keys, st.args))
	require.Equal(t, a, b, "%s %q %q: script vs module", st.name, st.keys, st.args)
	if st.want != "" {
		require.Equal(t, st.want, a, "%s %q %q", st.name, st.keys, st.args)
	}
	return a
}

// sameFast requires equal datasets (fields byte for byte, times by
// class), with what says when.
func sameFast(t *testing.T, scr, nat *side, what string) {
	t.Helper()
	if d := diffDumps(scr.fastDump(t), nat.fastDump(t)); len(d) > 0 {
		t.Fatalf("%s: datasets differ (script vs module):\n%s", what, strings.Join(d, "\n"))
	}
}

// onBoth runs a plain command on both sides.
func onBoth(t *testing.T, scr, nat *side, args ...string) {
	t.Helper()
	scr.must(t, args...)
	nat.must(t, args...)
}
