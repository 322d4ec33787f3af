package store

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/segment"
)

// Source is a store to import from, named as the user gave it.
type Source struct {
	Store *Store
	Name  string
}

// ImportAll copies every experiment of the sources (each source's oldest
// first) and every bisect's answer into s, whole, or nothing: an
// experiment or bisect s holds already, or that two sources hold, and a
// segment that is not of the load its group is (another N, other cells,
// a segment the group has) are refused before anything is copied, and a
// copy that fails midway is undone. said gets a line for each one copied.
func (s *Store) ImportAll(ctx context.Context, sources []Source, said func(string)) (experiments, bisects int, err error) {
	var todo []imported
	var bs []importedBisect
	for _, src := range sources {
		list, err := src.Store.ListExperiments(ctx)
		if err != nil {
			return 0, 0, err
		}
		for _, e := range slices.Backward(list) { // oldest first
			todo = append(todo, imported{src.Store, e, src.Name})
		}
		stored, err := src.Store.Bisects(ctx)
		if err != nil {
			return 0, 0, err
		}
		for _, b := range stored {
			bs = append(bs, importedBisect{b, src.Name})
		}
	}
	if err := checkImport(ctx, s, todo); err != nil {
		return 0, 0, err
	}
	if err := checkBisects(ctx, s, bs); err != nil {
		return 0, 0, err
	}
	var done, doneBisects []string
	// Undo what this import copied: nothing half-imported stays.
	undo := func() {
		for _, id := range done {
			_ = s.DeleteExperiment(context.WithoutCancel(ctx), id)
		}
		for _, id := range doneBisects {
			_ = s.DeleteBisect(context.WithoutCancel(ctx), id)
		}
	}
	for _, t := range todo {
		if err := s.Import(ctx, t.from, t.e); err != nil {
			undo()
			return 0, 0, fmt.Errorf("import %s from %s: %w (nothing imported)", t.e.ID, t.src, err)
		}
		done = append(done, t.e.ID)
		what := t.e.ID
		if t.e.Segment != "" {
			what += " (segment " + t.e.Segment + " of " + t.e.SegmentGroup + ")"
		}
		said(fmt.Sprintf("imported %s from %s", what, t.src))
	}
	for _, b := range bs {
		if err := s.ImportBisect(ctx, b.b); err != nil {
			undo()
			return 0, 0, fmt.Errorf("import bisect %s from %s: %w (nothing imported)", b.b.ID, b.src, err)
		}
		doneBisects = append(doneBisects, b.b.ID)
		said(fmt.Sprintf("imported bisect %s from %s", b.b.ID, b.src))
	}
	return len(done), len(doneBisects), nil
}

// imported is an experiment to copy and the store it comes from.
type imported struct {
	from *Store
	e    Experiment
	src  string
}

// importedBisect is a bisect's answer to copy and the store it comes from.
type importedBisect struct {
	b   StoredBisect
	src string
}

// checkBisects refuses, before anything is copied, a bisect the store
// holds already or that two sources hold (its steps are refused alike).
func checkBisects(ctx context.Context, s *Store, bisects []importedBisect) error {
	have, err := s.Bisects(ctx)
	if err != nil {
		return err
	}
	seen := map[string]string{}
	for _, b := range have {
		seen[b.ID] = s.Path()
	}
	for _, b := range bisects {
		if src, ok := seen[b.b.ID]; ok {
			if src == s.Path() {
				return badinput.Errorf("iolab import: bisect %s (from %s) is in %s already; imported before? (iolab rm it there to import it again)", b.b.ID, b.src, src)
			}
			return badinput.Errorf("iolab import: bisect %s is in both %s and %s; import one of them", b.b.ID, src, b.src)
		}
		seen[b.b.ID] = b.src
	}
	return nil
}

// checkImport refuses, before anything is copied, an experiment the store
// holds already or that two sources hold, and a segment that is not of
// the load its group is (another N, other cells, a segment the group has).
func checkImport(ctx context.Context, s *Store, todo []imported) error {
	have, err := s.ListExperiments(ctx)
	if err != nil {
		return err
	}
	held := map[string]bool{}
	for _, e := range have {
		held[e.ID] = true
	}
	seen := map[string]string{}
	type member struct {
		id, seg string
		cells   []Cell
	}
	groups := map[string][]member{}
	for _, t := range todo {
		if held[t.e.ID] {
			return badinput.Errorf("iolab import: experiment %s (from %s) is in %s already; imported before? (iolab rm it there to import it again)", t.e.ID, t.src, s.Path())
		}
		if src, twice := seen[t.e.ID]; twice {
			return badinput.Errorf("iolab import: experiment %s is in both %s and %s; import one of them", t.e.ID, src, t.src)
		}
		seen[t.e.ID] = t.src
		if t.e.Status == StatusRunning {
			return badinput.Errorf("iolab import: experiment %s is still being run in %s; import it once it has ended", t.e.ID, t.src)
		}
		if t.e.SegmentGroup == "" {
			continue
		}
		cells, err := t.from.Cells(ctx, t.e.ID)
		if err != nil {
			return err
		}
		groups[t.e.SegmentGroup] = append(groups[t.e.SegmentGroup], member{t.e.ID, t.e.Segment, cells})
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		members := groups[g]
		existing, err := s.Members(ctx, g)
		if err != nil {
			return err
		}
		for _, m := range existing {
			cells, err := s.Cells(ctx, m.ID)
			if err != nil {
				return err
			}
			members = append(members, member{m.ID, m.Segment, cells})
		}
		first := members[0]
		n0, _ := segment.Parse(first.seg)
		bySeg := map[string]string{}
		for _, m := range members {
			n, err := segment.Parse(m.seg)
			switch {
			case err != nil:
				return badinput.Errorf("iolab import: experiment %s: segment %q: %v", m.id, m.seg, err)
			case n.N != n0.N:
				return badinput.Errorf("iolab import: segment group %s is not one load: %s is a segment of %d, %s of %d", g, m.id, n.N, first.id, n0.N)
			case bySeg[m.seg] != "":
				return badinput.Errorf("iolab import: segment group %s would hold segment %s twice (%s and %s)", g, m.seg, bySeg[m.seg], m.id)
			case !sameCells(m.cells, first.cells):
				return badinput.Errorf("iolab import: segment group %s is not one load: %s and %s ran other cells", g, m.id, first.id)
			}
			bySeg[m.seg] = m.id
		}
	}
	return nil
}

// sameCells says two segments ran the same cells (names, variants,
// workloads and the whole load's parameters).
func sameCells(a, b []Cell) bool {
	return slices.EqualFunc(a, b, func(x, y Cell) bool {
		return x.Index == y.Index && x.Name == y.Name && x.Variant == y.Variant && x.Workload == y.Workload && maps.Equal(x.Params, y.Params)
	})
}
