package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

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

func runImport(ctx context.Context, db string, sources []string, stdout io.Writer) error {
	for _, src := range sources {
		if samePath(src, db) {
			return usage("iolab import %s: it is --db itself", src)
		}
	}
	var from []store.Source
	for _, src := range sources {
		s, err := openExisting(ctx, src)
		if err != nil {
			return err
		}
		defer s.Close()
		from = append(from, store.Source{Store: s, Name: src})
	}
	st, err := openStore(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	experiments, bisects, err := st.ImportAll(ctx, from, func(line string) { fmt.Fprintln(stdout, line) })
	if err != nil {
		return err
	}
	what := units.Plural(experiments, "experiment")
	if bisects > 0 {
		what += " and " + units.Plural(bisects, "bisect")
	}
	fmt.Fprintf(stdout, "%s imported into %s; `%s` shows the newest\n", what, st.Path(), showCommand("", db))
	return nil
}

// samePath says two stores are the same file (or URL).
func samePath(a, b string) bool {
	x, errA := filepath.Abs(a)
	y, errB := filepath.Abs(b)
	return a == b || (errA == nil && errB == nil && x == y)
}
