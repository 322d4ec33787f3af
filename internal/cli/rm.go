package cli

import (
	"bufio"
	"context"
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
		Use:   "rm EXPERIMENT...",
		Short: "Delete stored experiments and everything stored of them (a load run in segments is deleted whole)",
		Long: `Delete stored experiments: their runs, series, profiles, snapshots and notes. An experiment that
is a segment of a load takes every other segment of that load with it, so no half of a load is left
to be merged. An experiment whose runner still lives is refused. It asks before deleting, unless
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
	for _, id := range ids {
		e, err := st.Find(ctx, id)
		if err != nil {
			return err
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
	return nil
}
