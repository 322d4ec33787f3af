package analysis

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/iolab/iolab/internal/profiling"
	"github.com/iolab/iolab/internal/store"
)

// cpuProfile is a Go CPU profile in which each named function took the
// given samples, each its own leaf called from main.
func cpuProfile(t *testing.T, samples map[string]int64) []byte {
	t.Helper()
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}, PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 1}
	main := &profile.Function{ID: 1, Name: "main"}
	mainLoc := &profile.Location{ID: 1, Line: []profile.Line{{Function: main}}}
	p.Function, p.Location = []*profile.Function{main}, []*profile.Location{mainLoc}
	for name, n := range samples {
		id := uint64(len(p.Function) + 1)
		f := &profile.Function{ID: id, Name: name}
		loc := &profile.Location{ID: id, Line: []profile.Line{{Function: f}}}
		p.Function, p.Location = append(p.Function, f), append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc, mainLoc}, Value: []int64{n}})
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The views come per cell, the baseline first whatever order the cells
// were stored in, merge the measured runs only, and give a variant its
// changes against the baseline's profile of the same cell.
func TestProfileViews(t *testing.T) {
	data := &store.Data{
		Cells: []store.Cell{{ID: 1, Name: "c", Variant: "new"}, {ID: 2, Name: "c", Variant: "old"}},
		Runs: []store.Run{
			{ID: 10, CellID: 1, Status: store.StatusOK}, {ID: 11, CellID: 1, Status: store.StatusOK},
			{ID: 12, CellID: 2, Status: store.StatusOK}, {ID: 13, CellID: 2, Status: store.StatusOK, Warmup: true},
			{ID: 14, CellID: 2, Status: store.StatusFailed},
		},
	}
	stored := map[int64]map[string][]byte{
		10: {profiling.GoPprof: cpuProfile(t, map[string]int64{"tls": 30, "copy": 10})},
		11: {profiling.GoPprof: cpuProfile(t, map[string]int64{"tls": 30, "copy": 10})},
		12: {profiling.GoPprof: cpuProfile(t, map[string]int64{"copy": 40})},
		13: {profiling.GoPprof: cpuProfile(t, map[string]int64{"warmup": 1000})},
		14: {profiling.GoPprof: cpuProfile(t, map[string]int64{"failed": 1000})},
	}
	views, err := ProfileViews(data, stored, "old", ProfileOptions{Top: 5, Sort: profiling.SortFlat, Focus: regexp.MustCompile("^tls$")})
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 2 || views[0].Variant != "old" || views[1].Variant != "new" {
		t.Fatalf("views %+v: want old (the baseline), then new", views)
	}
	old, nw := views[0], views[1]
	if old.Runs != 1 || old.Samples != 40 || old.Top[0].Name != "copy" || old.Top[0].Flat != 1 || old.Changes != nil {
		t.Errorf("baseline view %+v: want its one measured run, 40 samples all in copy, no changes", old)
	}
	if nw.Runs != 2 || nw.Samples != 80 || nw.Top[0].Name != "tls" || nw.Top[0].Flat != 0.75 {
		t.Errorf("new view %+v: want two runs merged, tls 75%% first", nw)
	}
	if len(nw.Changes) < 2 || nw.Changes[0].Name+nw.Changes[1].Name != "copytls" && nw.Changes[0].Name+nw.Changes[1].Name != "tlscopy" {
		t.Errorf("new's changes %+v: want copy (100%% to 25%%) and tls (absent from the baseline, 75%%) first", nw.Changes)
	}
	for _, c := range nw.Changes {
		if c.Name == "tls" && (c.BaseFlat != 0 || c.Flat != 0.75) || c.Name == "copy" && (c.BaseFlat != 1 || c.Flat != 0.25) {
			t.Errorf("change %+v: want tls 0 to 75%%, copy 100 to 25%%", c)
		}
	}
	if len(nw.Focus) != 1 || nw.Focus[0].Name != "tls" || len(nw.Focus[0].Callers) != 1 || nw.Focus[0].Callers[0].Name != "main" {
		t.Errorf("focus %+v: want tls called by main", nw.Focus)
	}
	if nw.Merged == nil || nw.Merged.Sample == nil {
		t.Error("the merged profile is not kept for go tool pprof")
	}
	stored[12][profiling.GoPprof] = []byte("not a profile")
	if _, err := ProfileViews(data, stored, "old", ProfileOptions{Top: 5}); err == nil {
		t.Error("a stored profile that does not parse gave no error")
	}
}
