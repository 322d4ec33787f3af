package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/analysis"
)

// A group's segments are listed in their order, 0/12 ... 9/12, 10/12,
// 11/12 — not as their names sort as text (0, 1, 10, 11, 2, ...).
func TestSegmentsInTheirOrder(t *testing.T) {
	t.Parallel()
	v := &analysis.SegmentsView{Group: "g", N: 12, Experiments: map[string]string{}}
	var want []string
	for i := range 12 {
		s := fmt.Sprintf("%d/12", i)
		v.Experiments[s] = fmt.Sprintf("e%d", i)
		want = append(want, s+"=e"+fmt.Sprint(i))
	}
	var buf bytes.Buffer
	if err := WriteSegments(&buf, v); err != nil {
		t.Fatal(err)
	}
	if line := strings.SplitN(strings.TrimLeft(buf.String(), "\n"), "\n", 2)[0]; line != "segments of g (12): "+strings.Join(want, " ") {
		t.Errorf("%q", line)
	}
}
