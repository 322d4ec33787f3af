package experiment

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/store"
)

func TestLineDiff(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{"x\ny\nz", "x\ny\nz", ""},
		{"x\ny\nz", "x\nY\nz", "+Y | -y"},
		{"rounds: 6\norder: random", "rounds: 6\nwarmup: 1\norder: random", "+warmup: 1"},
		{"a\nb", "b", "-a"},
	} {
		if got := LineDiff(c.a, c.b); got != c.want {
			t.Errorf("LineDiff(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

// --resume takes the newest unfinished experiment of the plan, of the same
// segment, and refuses one whose plan changed, naming the line.
func TestResumable(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	text := "name: p\nrounds: 6\n"
	at := time.Now()
	add := func(id, status, seg, text string) {
		t.Helper()
		rec, _ := json.Marshal(store.PlanRecord{Text: text, Order: "random"})
		at = at.Add(time.Second)
		e := &store.Experiment{ID: id, Name: "p", Command: "c", Plan: rec, CreatedAt: at, Status: status, Segment: seg}
		if seg != "" {
			e.SegmentGroup = "g"
		}
		if err := st.CreateExperiment(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	p := &plan.Plan{Name: "p", Order: "random"}
	if _, _, err := Resumable(ctx, st, p, text, segment.Whole); !badinput.Is(err) || !strings.Contains(err.Error(), `no unfinished experiment of plan "p"`) {
		t.Fatalf("nothing to resume: %v", err)
	}
	add("old", store.StatusInterrupted, "", text)
	add("done", "done", "", text)
	add("seg", store.StatusInterrupted, "1/2", text)
	if id, _, err := Resumable(ctx, st, p, text, segment.Whole); err != nil || id != "old" {
		t.Errorf("whole load: %q, %v; want old (done is finished, seg a segment's)", id, err)
	}
	if id, _, err := Resumable(ctx, st, p, text, segment.Segment{I: 1, N: 2}); err != nil || id != "seg" {
		t.Errorf("segment 1/2: %q, %v; want seg", id, err)
	}
	_, _, err = Resumable(ctx, st, p, "name: p\nrounds: 8\n", segment.Whole)
	if !badinput.Is(err) || !strings.Contains(err.Error(), "+rounds: 8 | -rounds: 6") {
		t.Errorf("a changed plan: %v; want the line that changed", err)
	}
}
