package analysis

import (
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// A history that matched nothing says why, naming what there is.
func TestNoHistory(t *testing.T) {
	res := &metrics.Result{}
	res.ByOp[metrics.Read].Ops = 1
	exps := []*store.Data{{Cells: []store.Cell{{ID: 1, Name: "seq", Variant: "a"}}, Runs: []store.Run{{CellID: 1, Result: res}}}}
	for _, c := range []struct {
		exps   []*store.Data
		metric string
		want   string
	}{
		{nil, "", "holds no experiments yet"},
		{exps, "nosuch_metric", `--metric "nosuch_metric": no stored run has it; stored metrics: `},
		{exps, "", "no cell with measured runs matches; stored cells: a/seq"},
	} {
		err := NoHistory(c.exps, CellFilter{"x"}, c.metric)
		if !badinput.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error saying %q", c.metric, err, c.want)
		}
	}
}
