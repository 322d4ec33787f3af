package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
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
	doomed, err := st.Doom(ctx, ids)
	if err != nil {
		return err
	}
	if m, ok := doomed.Running(); ok {
		return usage("iolab rm: experiment %s is being run (%s); stop it first", m.ID, m.Owner)
	}
	names := strings.Join(doomed.Names(), ", ")
	if !yes {
		if !term.IsTerminal(int(stdin.Fd())) {
			return usage("iolab rm: would delete %s; give --yes to delete without a terminal to confirm on", names)
		}
		fmt.Fprintf(stdout, "delete %s? [y/N] ", names)
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(stdout, "nothing deleted")
			return nil
		}
	}
	return st.Delete(ctx, doomed, func(what string) { fmt.Fprintf(stdout, "deleted %s\n", what) })
}
