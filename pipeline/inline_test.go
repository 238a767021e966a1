package pipeline_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestHotPathInlines: the methods a caller makes per argument and per
// typed command inline into the caller, so that each is one call, as
// before issue 23's copy and generation checks (the budget is 80; ArgInt
// is at it). A change that pushes one over the budget fails here, not
// only in a benchmark on a quiet machine.
func TestHotPathInlines(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	out, err := exec.Command(goBin, "build", "-gcflags=-m", ".", "../resp", "../cmds").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	for _, fn := range []string{
		`\(\*Batch\)\.Arg`, `\(\*Batch\)\.ArgBytes`, `\(\*Batch\)\.ArgInt`,
		`\(\*Batch\)\.own`, `\(\*Batch\)\.catchUp`,
		`\(\*Batch\)\.Int`, `\(\*Batch\)\.String`, `\(\*Batch\)\.OK`,
		`\(\*Batch\)\.Status`, `\(\*Batch\)\.ready`,
		`Decode\[go\.shape\.\[\]string\]`,
		`\(\*Cmds\)\.ArgInt`, `AppendBulkInt`,
		// resp.Command builds a raw command in one call (it lost its
		// inlining once when AppendCommand became an inlined wrapper).
		`Command`, `CommandBytes`,
		// A queued Command is looked at by inlined calls, not through
		// a func value (cmds' Cmd and Err were each a call).
		`Command\.Cmd`, `Command\.Err`, `Command\.Kind`,
	} {
		if !regexp.MustCompile(`(?m)can inline ` + fn + `( |$)`).Match(out) {
			lines := regexp.MustCompile(`(?m)^.*inline `+fn+`( .*)?$`).FindAll(out, -1)
			t.Errorf("%s does not inline: %s", strings.ReplaceAll(fn, `\`, ""), lines)
		}
	}
}
