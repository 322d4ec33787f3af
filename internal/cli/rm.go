package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/iolab/iolab/internal/store"
)

func newRmCommand(stdout io.Writer) *cobra.Command {
	var db string
	var yes bool
	cmd := &cobra.Command{
		Use:   "rm EXPERIMENT|BISECT...",
		Short: "Delete stored experiments and everything stored of them (a load run in segments, or a bisect, is deleted whole)",
		Long: `Delete stored experiments: their runs, series, profiles, snapshots and notes. An experiment that
is a segment of a load takes every other segment of that load with it, so no half of a load is left
to be merged; a bisect (by its ID, or by any step's) goes with its answer and every step. An
experiment whose runner still lives is refused. It asks before deleting, unless
--yes is given; without a terminal to ask on, --yes is needed.`,
		Example: `  iolab rm 20261120-080000-0001
  iolab rm 0001 0002 --yes`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRm(cmd.Context(), db, args, yes, os.Stdin, stdout)
		},
	}
	dbFlag(cmd.Flags(), &db)
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete without asking")
	return cmd
}

func runRm(ctx context.Context, db string, ids []string, yes bool, stdin *os.File, stdout io.Writer) error {
	st, err := openExisting(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	// Resolve every argument, and each group to all its members, before
	// deleting anything.
	var doomed []store.Member
	add := func(m store.Member) {
		if !slices.ContainsFunc(doomed, func(d store.Member) bool { return d.ID == m.ID }) {
			doomed = append(doomed, m)
		}
	}
	// A bisect is deleted whole too: its answer and every step, whether
	// named by its ID or by a step's.
	var bisects []string
	all, err := st.ListExperiments(ctx)
	if err != nil {
		return err
	}
	var loose []store.Member // the experiments of no load in segments, a bisect's steps among them
	addBisect := func(b string) error {
		if slices.Contains(bisects, b) {
			return nil
		}
		bisects = append(bisects, b)
		if loose == nil {
			if loose, err = st.Members(ctx, ""); err != nil {
				return err
			}
		}
		for _, e := range all {
			if e.BisectID() != b {
				continue
			}
			if i := slices.IndexFunc(loose, func(m store.Member) bool { return m.ID == e.ID }); i >= 0 {
				add(loose[i])
			}
		}
		return nil
	}
	for _, id := range ids {
		e, err := st.Find(ctx, id)
		if errors.Is(err, store.ErrNoExperiment) {
			if _, berr := st.Bisect(ctx, id); berr == nil {
				if err := addBisect(id); err != nil {
					return err
				}
				continue
			}
		}
		if err != nil {
			return err
		}
		if b := e.BisectID(); b != "" {
			if err := addBisect(b); err != nil {
				return err
			}
			continue
		}
		members, err := st.Members(ctx, e.SegmentGroup) // "" lists the experiments of no group
		if err != nil {
			return err
		}
		for _, m := range members {
			if m.ID == e.ID || e.SegmentGroup != "" {
				add(m)
			}
		}
	}
	var names []string
	for _, b := range bisects {
		names = append(names, "bisect "+b+" (its answer)")
	}
	for _, m := range doomed {
		if m.Status == store.StatusRunning && m.Gone() == "" && m.Owner.PID != 0 {
			return usage("iolab rm: experiment %s is being run (%s); stop it first", m.ID, m.Owner)
		}
		name := m.ID
		if m.Segment != "" {
			name += " (segment " + m.Segment + ")"
		}
		names = append(names, name)
	}
	if !yes {
		if !term.IsTerminal(int(stdin.Fd())) {
			return usage("iolab rm: would delete %s; give --yes to delete without a terminal to confirm on", strings.Join(names, ", "))
		}
		fmt.Fprintf(stdout, "delete %s? [y/N] ", strings.Join(names, ", "))
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(stdout, "nothing deleted")
			return nil
		}
	}
	for _, m := range doomed {
		if err := st.DeleteExperiment(context.WithoutCancel(ctx), m.ID); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted %s\n", m.ID)
	}
	for _, b := range bisects {
		if err := st.DeleteBisect(context.WithoutCancel(ctx), b); err != nil && !errors.Is(err, store.ErrNoBisect) {
			return err
		}
		fmt.Fprintf(stdout, "deleted bisect %s\n", b)
	}
	return nil
}
