package experiment

import (
	"context"
	"strings"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/store"
)

// Resumable finds the newest unfinished experiment of the plan — of this
// segment, when the load is split: a segment resumes its own — and
// refuses, naming the lines that differ, if the plan changed since; text
// is the plan as stored (plan.Redact).
func Resumable(ctx context.Context, st *store.Store, p *plan.Plan, text string, seg segment.Segment) (string, store.PlanRecord, error) {
	exps, err := st.ListExperiments(ctx)
	if err != nil {
		return "", store.PlanRecord{}, err
	}
	mine := ""
	if seg.Split() {
		mine = seg.String()
	}
	for _, e := range exps {
		if e.Name != p.Name || e.Status == "done" || e.Segment != mine {
			continue
		}
		sp, ok := e.PlanRecord()
		if !ok || sp.Text == "" {
			continue
		}
		if sp.Text != text || sp.Order != p.Order {
			return "", sp, badinput.Errorf("--resume: the plan changed since experiment %s ran (%s); resume with the plan it started with, or start a new experiment",
				e.ID, LineDiff(sp.Text+"order: "+sp.Order, text+"order: "+p.Order))
		}
		return e.ID, sp, nil
	}
	return "", store.PlanRecord{}, badinput.Errorf("--resume: no unfinished experiment of plan %q in %s", p.Name, st.Path())
}

// LineDiff lists the lines that differ between two texts, as "-old" and
// "+new" joined on one line, in order (a longest-common-subsequence diff;
// plans are short).
func LineDiff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, "+"+strings.TrimSpace(y[j]))
			j++
		default:
			out = append(out, "-"+strings.TrimSpace(x[i]))
			i++
		}
	}
	return strings.Join(out, " | ")
}
