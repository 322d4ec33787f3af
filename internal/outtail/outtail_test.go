package outtail

import (
	"strings"
	"testing"
)

func TestTailKeepsTheEndOnOneLine(t *testing.T) {
	t.Parallel()
	tl := &Tail{Max: 64}
	tl.Write([]byte(strings.Repeat("x", 100)))
	tl.Write([]byte("\nerror:\n  undefined: frobnicate\n"))
	got := tl.String()
	if !strings.HasSuffix(got, "error: undefined: frobnicate") || strings.Contains(got, "\n") || len(got) > 64 {
		t.Fatalf("%q", got)
	}
	if OneLine(nil) != "(no output)" {
		t.Fatal("empty output")
	}
	if s := OneLine([]byte(strings.Repeat("y", 1000))); len(s) != 303 || !strings.HasPrefix(s, "...") {
		t.Fatalf("long output folded to %d bytes", len(s))
	}
}
