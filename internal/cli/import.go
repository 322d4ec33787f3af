package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/units"
)

func newImportCommand(stdout io.Writer) *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "import STORE...",
		Short: "Copy the experiments of other stores into this one (segments run with SQLite files of their own, merged afterwards)",
		Long: `Copy every experiment of each STORE (a SQLite file, or a postgres:// URL) into --db, whole:
runs with their histograms, series, frames, profiles and the machine's seconds, environment
snapshots, notes and kept objects — and every bisect's answer, beside its steps. Segments of one load run with stores of their own (--segment I/N
--start-at TIME --run-every D, meeting by the clock instead of in a shared store) become one load again:
show, report and history merge them as if they had shared the store. An experiment --db already
holds, or one in two of the stores, is refused, and so is a segment that is not of the load its
group holds in --db (another split, other cells) — before anything is copied; a copy that fails
midway is undone.`,
		Example: `  iolab import host-a.db host-b.db --db all.db
  iolab show --db all.db`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(cmd.Context(), db, args, stdout)
		},
	}
	dbFlag(cmd.Flags(), &db)
	return cmd
}

// imported is an experiment to copy and the store it comes from.
type imported struct {
	from *store.Store
	e    store.Experiment
	src  string
}

func runImport(ctx context.Context, db string, sources []string, stdout io.Writer) error {
	for _, src := range sources {
		if samePath(src, db) {
			return usage("iolab import %s: it is --db itself", src)
		}
	}
	var todo []imported
	var bisects []importedBisect
	for _, src := range sources {
		from, err := openExisting(ctx, src)
		if err != nil {
			return err
		}
		defer from.Close()
		list, err := from.ListExperiments(ctx)
		if err != nil {
			return err
		}
		for _, e := range slices.Backward(list) { // oldest first
			todo = append(todo, imported{from, e, src})
		}
		bs, err := from.Bisects(ctx)
		if err != nil {
			return err
		}
		for _, b := range bs {
			bisects = append(bisects, importedBisect{b, src})
		}
	}
	st, err := openStore(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := checkImport(ctx, st, todo); err != nil {
		return err
	}
	if err := checkBisects(ctx, st, bisects); err != nil {
		return err
	}
	var done, doneBisects []string
	// Undo what this import copied: nothing half-imported stays.
	undo := func() {
		for _, id := range done {
			_ = st.DeleteExperiment(context.WithoutCancel(ctx), id)
		}
		for _, id := range doneBisects {
			_ = st.DeleteBisect(context.WithoutCancel(ctx), id)
		}
	}
	for _, t := range todo {
		if err := st.Import(ctx, t.from, t.e); err != nil {
			undo()
			return fmt.Errorf("import %s from %s: %w (nothing imported)", t.e.ID, t.src, err)
		}
		done = append(done, t.e.ID)
		what := t.e.ID
		if t.e.Segment != "" {
			what += " (segment " + t.e.Segment + " of " + t.e.SegmentGroup + ")"
		}
		fmt.Fprintf(stdout, "imported %s from %s\n", what, t.src)
	}
	for _, b := range bisects {
		if err := st.ImportBisect(ctx, b.b); err != nil {
			undo()
			return fmt.Errorf("import bisect %s from %s: %w (nothing imported)", b.b.ID, b.src, err)
		}
		doneBisects = append(doneBisects, b.b.ID)
		fmt.Fprintf(stdout, "imported bisect %s from %s\n", b.b.ID, b.src)
	}
	what := units.Plural(len(done), "experiment")
	if len(doneBisects) > 0 {
		what += " and " + units.Plural(len(doneBisects), "bisect")
	}
	fmt.Fprintf(stdout, "%s imported into %s; `%s` shows the newest\n", what, st.Path(), showCommand("", db))
	return nil
}

// importedBisect is a bisect's answer to copy and the store it comes from.
type importedBisect struct {
	b   store.StoredBisect
	src string
}

// checkBisects refuses, before anything is copied, a bisect the store
// holds already or that two sources hold (its steps are refused alike).
func checkBisects(ctx context.Context, st *store.Store, bisects []importedBisect) error {
	have, err := st.Bisects(ctx)
	if err != nil {
		return err
	}
	seen := map[string]string{}
	for _, b := range have {
		seen[b.ID] = st.Path()
	}
	for _, b := range bisects {
		if src, ok := seen[b.b.ID]; ok {
			if src == st.Path() {
				return usage("iolab import: bisect %s (from %s) is in %s already; imported before? (iolab rm it there to import it again)", b.b.ID, b.src, src)
			}
			return usage("iolab import: bisect %s is in both %s and %s; import one of them", b.b.ID, src, b.src)
		}
		seen[b.b.ID] = b.src
	}
	return nil
}

// checkImport refuses, before anything is copied, an experiment the store
// holds already or that two sources hold, and a segment that is not of
// the load its group is (another N, other cells, a segment the group has).
func checkImport(ctx context.Context, st *store.Store, todo []imported) error {
	have, err := st.ListExperiments(ctx)
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
		cells   []store.Cell
	}
	groups := map[string][]member{}
	for _, t := range todo {
		if held[t.e.ID] {
			return usage("iolab import: experiment %s (from %s) is in %s already; imported before? (iolab rm it there to import it again)", t.e.ID, t.src, st.Path())
		}
		if src, twice := seen[t.e.ID]; twice {
			return usage("iolab import: experiment %s is in both %s and %s; import one of them", t.e.ID, src, t.src)
		}
		seen[t.e.ID] = t.src
		if t.e.Status == store.StatusRunning {
			return usage("iolab import: experiment %s is still being run in %s; import it once it has ended", t.e.ID, t.src)
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
		existing, err := st.Members(ctx, g)
		if err != nil {
			return err
		}
		for _, m := range existing {
			cells, err := st.Cells(ctx, m.ID)
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
				return usage("iolab import: experiment %s: segment %q: %v", m.id, m.seg, err)
			case n.N != n0.N:
				return usage("iolab import: segment group %s is not one load: %s is a segment of %d, %s of %d", g, m.id, n.N, first.id, n0.N)
			case bySeg[m.seg] != "":
				return usage("iolab import: segment group %s would hold segment %s twice (%s and %s)", g, m.seg, bySeg[m.seg], m.id)
			case !sameCells(m.cells, first.cells):
				return usage("iolab import: segment group %s is not one load: %s and %s ran other cells", g, m.id, first.id)
			}
			bySeg[m.seg] = m.id
		}
	}
	return nil
}

// sameCells says two segments ran the same cells (names, variants,
// workloads and the whole load's parameters).
func sameCells(a, b []store.Cell) bool {
	return slices.EqualFunc(a, b, func(x, y store.Cell) bool {
		return x.Index == y.Index && x.Name == y.Name && x.Variant == y.Variant && x.Workload == y.Workload && maps.Equal(x.Params, y.Params)
	})
}

// samePath says two stores are the same file (or URL).
func samePath(a, b string) bool {
	x, errA := filepath.Abs(a)
	y, errB := filepath.Abs(b)
	return a == b || (errA == nil && errB == nil && x == y)
}
