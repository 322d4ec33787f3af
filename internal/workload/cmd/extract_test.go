package cmd

import (
	"regexp"
	"strings"
	"testing"
)

// Lines arrive in pieces, across writes, with CR LF; the last match
// counts; a line longer than maxLine is searched in its first part only.
func TestExtractorReadsLinesAcrossWrites(t *testing.T) {
	t.Parallel()
	f := newFindings([]Metric{
		{Name: "ingest_s", JSONKey: "msg", JSONValue: "ingest done", Field: "duration_ms", Scale: 0.001},
		{Name: "rate", Regex: regexp.MustCompile(`rate=([0-9.]+)`), Scale: 1},
		{Name: "any", Field: "n", Scale: 2},
	})
	out, errs := &extractor{found: f}, &extractor{found: f}
	for _, piece := range []string{`{"msg":"ingest `, `done","duration_ms":1500}` + "\r\n", "rate=1", "2.5 items\n", `{"n": "21"}`} {
		_, _ = out.Write([]byte(piece))
	}
	_, _ = errs.Write([]byte("rate=99\n" + strings.Repeat("x", maxLine+10) + " rate=5\n"))
	got, err := f.finish(out, errs)
	if err != nil {
		t.Fatal(err)
	}
	// stderr's rate line came last; the one past maxLine is not searched.
	if got["ingest_s"] != 1.5 || got["any"] != 42 || got["rate"] != 99 {
		t.Fatalf("%v", got)
	}
	if len(out.line) != 0 || cap(errs.line) > 2*maxLine {
		t.Fatalf("held %d and %d bytes", len(out.line), cap(errs.line))
	}
}
