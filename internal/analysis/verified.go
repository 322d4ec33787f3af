package analysis

import (
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/store"
)

// VerifiedCell is a read-back check of what one cell's runs wrote: the sum
// of its measured runs' own (--verify), or one later check of what they
// left in place (s3 verify: By, At and Target say which).
type VerifiedCell struct {
	Cell    string `json:"cell"`
	Variant string `json:"variant,omitempty"`
	Runs    int    `json:"runs"`
	VerifyView
	By          string     `json:"by,omitempty"`
	At          *time.Time `json:"at,omitempty"`
	Target      string     `json:"target,omitempty"`
	First       []string   `json:"first,omitempty"`
	Interrupted bool       `json:"interrupted,omitempty"`
}

// OK says every object read back was there and as written.
func (v VerifiedCell) OK() bool { return v.Failed() == 0 }

// VerifyView is the read-back check of what a run wrote: objects read and
// not as written (Mismatched), said not to exist (Missing), or that could
// not be read (Unreadable: a timeout, an answer cut short or malformed).
type VerifyView struct {
	Checked    int64 `json:"checked"`
	Mismatched int64 `json:"mismatched"`
	Missing    int64 `json:"missing"`
	Unreadable int64 `json:"unreadable"`
}

// Failed is how many objects were not read back as written.
func (v VerifyView) Failed() int64 { return v.Mismatched + v.Missing + v.Unreadable }

func verifyView(res *metrics.Result) *VerifyView {
	checked, ok := res.Extra["verify_checked"]
	if !ok {
		return nil
	}
	return &VerifyView{Checked: int64(checked), Mismatched: int64(res.Extra["verify_mismatched"]), Missing: int64(res.Extra["verify_missing"]),
		Unreadable: int64(res.Extra["verify_unreadable"])}
}

// verified sums the read-back checks of the measured runs, per cell and
// variant, in the order the runs came, and adds each later check.
func verified(runs []RunView, d *store.Data) []VerifiedCell {
	var out []VerifiedCell
	at := map[[2]string]int{}
	for _, run := range runs {
		if run.Warmup || run.Verify == nil {
			continue
		}
		k := [2]string{run.Variant, run.Cell}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, VerifiedCell{Cell: run.Cell, Variant: run.Variant})
		}
		v := &out[i]
		v.Runs++
		v.Checked += run.Verify.Checked
		v.Mismatched += run.Verify.Mismatched
		v.Missing += run.Verify.Missing
		v.Unreadable += run.Verify.Unreadable
	}
	for _, x := range d.Verifies {
		v := VerifiedCell{By: x.By, At: &x.At, Target: x.Target, First: x.First, Interrupted: x.Interrupted,
			VerifyView: VerifyView{Checked: x.Checked, Mismatched: x.Mismatched, Missing: x.Missing, Unreadable: x.Unreadable}}
		for _, c := range d.Cells {
			if c.ID == x.CellID {
				v.Cell, v.Variant = c.Name, c.Variant
			}
		}
		out = append(out, v)
	}
	return out
}
