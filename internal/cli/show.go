package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/store"
)

func newShowCommand(stdout, stderr io.Writer) *cobra.Command {
	var o RepeatOptions
	var profile, follow bool
	var po ProfileOptions
	cmd := &cobra.Command{
		Use:   "show [EXPERIMENT | GROUP | BISECT]",
		Short: "Print a stored experiment's summary, and its variants' comparisons, again (default: the newest); a bisect's answer by its ID",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			if !profile {
				for _, name := range []string{"top", "sort", "focus", "pprof"} {
					if cmd.Flags().Changed(name) {
						return usage("--%s: lists a profile; give --profile too", name)
					}
				}
			}
			if follow {
				st, err := openExisting(cmd.Context(), o.DB)
				if err != nil {
					return err
				}
				defer st.Close()
				return runFollow(cmd.Context(), st, id, stdout)
			}
			if profile {
				return runShowProfiles(cmd.Context(), o, id, po, stdout)
			}
			return runShow(cmd.Context(), o, id, stdout, stderr)
		},
	}
	o.addOutputFlags(cmd.Flags())
	cmd.Flags().BoolVar(&follow, "follow", false, "draw a load run in segments as it runs, every second, from the store (EXPERIMENT: a segment group or an experiment of one; default the newest): the load's ops/s, MiB/s, p99 and errors, and each segment's, until every segment has ended")
	cmd.Flags().BoolVar(&profile, "profile", false, "print the servers' profiles: per cell and variant the functions that took the most CPU, and what changed against the baseline")
	po.addFlags(cmd.Flags())
	return cmd
}

// runShowProfiles prints a stored experiment's profiles.
func runShowProfiles(ctx context.Context, o RepeatOptions, id string, po ProfileOptions, stdout io.Writer) error {
	return withStoreOf(ctx, &o, func(st *store.Store) error { return printProfiles(ctx, st, id, o, po, stdout) })
}

// runShow prints a stored experiment again, or a bisect's answer.
func runShow(ctx context.Context, o RepeatOptions, id string, stdout, stderr io.Writer) error {
	o.mergeSegments = true
	return withStoreOf(ctx, &o, func(st *store.Store) error {
		view, err := storedBisect(ctx, st, id)
		switch {
		case err != nil:
			return err
		case view == nil:
			return printExperiment(ctx, st, id, o, stdout, stderr)
		case o.Format != "text" || len(o.Gates.FailOn) > 0 || len(o.Gates.Limits) > 0:
			return usage("%s is a bisect: show prints its answer as text or --json, without --format or gates", id)
		case o.JSON:
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(view)
		}
		return report.WriteBisect(stdout, view)
	})
}

// storedBisect is the answer of the bisect id names exactly; nil if it
// names none.
func storedBisect(ctx context.Context, st *store.Store, id string) (*analysis.BisectView, error) {
	if id == "" {
		return nil, nil
	}
	answer, err := st.Bisect(ctx, id)
	if errors.Is(err, store.ErrNoBisect) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var view analysis.BisectView
	if err := json.Unmarshal(answer, &view); err != nil {
		return nil, fmt.Errorf("bisect %s: its stored answer cannot be read: %w", id, err)
	}
	return &view, nil
}

// withStoreOf checks the output flags (into o: its gates are parsed
// there) and reads the store --db names.
func withStoreOf(ctx context.Context, o *RepeatOptions, read func(*store.Store) error) error {
	if err := o.validateOutput(); err != nil {
		return err
	}
	st, err := openExisting(ctx, o.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	return read(st)
}

func newLsCommand(stdout io.Writer) *cobra.Command {
	var db string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List stored experiments, newest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLs(cmd.Context(), db, asJSON, stdout)
		},
	}
	dbFlag(cmd.Flags(), &db)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON: [{id, name, status, created_at, finished_at, command, notes}]")
	return cmd
}

func runLs(ctx context.Context, db string, asJSON bool, stdout io.Writer) error {
	st, err := openExisting(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	exps, err := st.ListExperiments(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		list := []map[string]any{}
		for _, e := range exps {
			item := map[string]any{"id": e.ID, "name": e.Name, "status": e.Status, "created_at": e.CreatedAt, "command": e.Command, "notes": e.Notes}
			if !e.FinishedAt.IsZero() {
				item["finished_at"] = e.FinishedAt
			}
			list = append(list, item)
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EXPERIMENT\tCREATED\tSTATUS\tNAME\tCOMMAND")
	for _, e := range exps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.ID, e.CreatedAt.Local().Format("2006-01-02 15:04:05"), e.Status, e.Name, e.Command)
		for _, n := range e.Notes { // under it, as the note's own row
			fmt.Fprintf(tw, "\t%s\tnote\t\t%s\n", n.At.Local().Format("2006-01-02 15:04:05"), strings.Join(strings.Fields(n.Text), " "))
		}
	}
	return tw.Flush()
}

func newNoteCommand(stdout io.Writer) *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "note EXPERIMENT TEXT",
		Short: "Add a note to a stored experiment (what changed: \"VM-7: virtio queue depth 256\"); show, ls and history print it",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(args[1]) == "" {
				return usage("iolab note: an empty note; give the text to add")
			}
			st, err := openExisting(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer st.Close()
			d, err := st.Load(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := st.AddNote(cmd.Context(), d.Experiment.ID, args[1]); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "noted on %s\n", d.Experiment.ID)
			return nil
		},
	}
	dbFlag(cmd.Flags(), &db)
	return cmd
}
