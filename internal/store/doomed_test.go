package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Deleting a segment of a load dooms the whole load; a bisect's step dooms
// the bisect and every step; a loose experiment goes alone; each is named
// once however often it is asked for, and Delete leaves the rest.
func TestDoomTakesWholeLoadsAndBisects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := withExperiment(t, filepath.Join(t.TempDir(), "x.db"), "loose", nil)
	add := func(id, grp, seg, plan string) {
		t.Helper()
		e := &Experiment{ID: id, Name: "x", Command: "c", Plan: json.RawMessage(plan), CreatedAt: time.Now(), Status: StatusOK, SegmentGroup: grp, Segment: seg}
		if err := s.CreateExperiment(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	add("seg1", "g", "1/2", `{}`)
	add("seg2", "g", "2/2", `{}`)
	add("step1", "", "", `{"bisect":{"id":"b1"}}`)
	add("step2", "", "", `{"bisect":{"id":"b1"}}`)
	add("other", "", "", `{}`)
	if err := s.SaveBisect(ctx, "b1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	d, err := s.Doom(ctx, []string{"seg2", "step1", "loose", "seg1"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range d.Experiments {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"loose", "seg1", "seg2", "step1", "step2"}) || !slices.Equal(d.Bisects, []string{"b1"}) {
		t.Fatalf("doomed %v and bisects %v: want the load's two segments, the bisect's two steps and loose; bisect b1", ids, d.Bisects)
	}
	names := d.Names()
	if names[0] != "bisect b1 (its answer)" || !slices.Contains(names, "seg1 (segment 1/2)") {
		t.Errorf("names %q", names)
	}
	if _, running := d.Running(); running {
		t.Error("finished experiments reported as running")
	}
	byBisect, err := s.Doom(ctx, []string{"b1"})
	if err != nil || len(byBisect.Experiments) != 2 || len(byBisect.Bisects) != 1 {
		t.Errorf("by the bisect's ID: %+v, %v; want its two steps and itself", byBisect, err)
	}
	if _, err := s.Doom(ctx, []string{"nosuch"}); err == nil {
		t.Error("an unknown ID was doomed")
	}
	var gone []string
	if err := s.Delete(ctx, d, func(what string) { gone = append(gone, what) }); err != nil {
		t.Fatal(err)
	}
	if len(gone) != 6 || gone[5] != "bisect b1" {
		t.Errorf("deleted %v", gone)
	}
	left, err := s.ListExperiments(ctx)
	if err != nil || len(left) != 1 || left[0].ID != "other" {
		t.Errorf("left %+v, %v: want other alone", left, err)
	}
	if _, err := s.Bisect(ctx, "b1"); err == nil {
		t.Error("the bisect's answer is still there")
	}
}
