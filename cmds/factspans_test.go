package cmds

import (
	"testing"

	"github.com/echomq/echomq-go/resp"
)

// TestFactSpansOfEverySample (issue 24): for every build of every
// sample, the Fact the Builder makes from what it recorded while writing
// (the name's and second word's spans from the Info, the first
// argument's from its key or resp, the keys' offsets) names the bytes
// the command's encoding has there, and equals the Fact made from the
// spans resp records (AppendFactOf) and from the arguments (Inspect).
func TestFactSpansOfEverySample(t *testing.T) {
	var b Builder
	n := 0
	for _, s := range samples {
		for i, build := range builds(s) {
			cmd := build(&b)
			if cmd.Err() != nil {
				continue
			}
			n++
			enc := cmd.Cmd().Bytes()
			a := rawArgs(t, cmd.Cmd())
			f := cmd.Fact()
			if int(f.Size) != len(enc) || string(f.Name.Of(enc)) != string(a[0]) {
				t.Fatalf("%s (sample %d): size %d of %d, name %q", cmd, i, f.Size, len(enc), f.Name.Of(enc))
			}
			if len(a) > 1 && string(f.Arg1.Of(enc)) != string(a[1]) {
				t.Errorf("%s (sample %d): arg1 %q, want %q", cmd, i, f.Arg1.Of(enc), a[1])
			}
			if len(a) == 1 && f.Arg1 != (Span{}) {
				t.Errorf("%s (sample %d): arg1 %+v of a command of no arguments", cmd, i, f.Arg1)
			}
			spans, size, ok := resp.SplitCommand(enc, nil)
			if !ok || size != len(enc) {
				t.Fatalf("%s: SplitCommand %v %d", cmd, ok, size)
			}
			facts, _, _ := cmd.Info().AppendFactOf(nil, nil, enc, spans, nil)
			g, _ := Inspect(a, nil)
			for _, o := range []Fact{facts[0], g} {
				if o.Name != f.Name || o.Arg1 != f.Arg1 || o.Size != f.Size {
					t.Errorf("%s (sample %d): builder %+v, from spans %+v", cmd, i, f, o)
				}
			}
			if s.name == "migrate" {
				continue // its "" key: see TestFindKeysAsBuilder
			}
			if len(facts[0].Keys) != len(f.Keys) {
				t.Errorf("%s (sample %d): %d keys, from spans %d", cmd, i, len(f.Keys), len(facts[0].Keys))
				continue
			}
			for k := range f.Keys {
				if f.Keys[k] != facts[0].Keys[k] {
					t.Errorf("%s (sample %d): key %d at %+v, from spans %+v", cmd, i, k, f.Keys[k], facts[0].Keys[k])
				}
			}
		}
	}
	if n < 500 {
		t.Fatalf("only %d builds compared", n)
	}
}

// TestFactModeFromBuilder: CLIENT REPLY's and SCRIPT DEBUG's kind is
// refined by the mode the Builder wrote (no read of their bytes).
func TestFactModeFromBuilder(t *testing.T) {
	var b Builder
	replyModel := func(c Command) bool { return c.Fact().Kind&ReplyModel != 0 }
	if replyModel(b.ClientReply(ReplyOn).Build()) || !replyModel(b.ClientReply(ReplyOff).Build()) ||
		!replyModel(b.ClientReply(ReplySkip).Build()) {
		t.Error("CLIENT REPLY: ReplyModel only with OFF or SKIP")
	}
	if !replyModel(b.ScriptDebug(DebugYes).Build()) || replyModel(b.ScriptDebug(DebugNo).Build()) {
		t.Error("SCRIPT DEBUG: ReplyModel but with NO")
	}
}
