package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/workload"
	"github.com/iolab/iolab/internal/workload/s3"
)

// S3VerifyOptions are the flags of `iolab s3 verify`.
type S3VerifyOptions struct {
	DB   string
	JSON bool
	s3.VerifyFlags
}

func newS3VerifyCommand(stdout io.Writer) *cobra.Command {
	var o S3VerifyOptions
	cmd := &cobra.Command{
		Use:   "verify [EXPERIMENT]",
		Short: "Read back the objects an s3 experiment left in place (--keep) and check their content",
		Long: `Checks every object in the experiment's manifest — written by runs with --keep — against
the content its seed generates: after a server restart, a failover, a repair. What it finds is
stored with the experiment (show, report, history, --fail-on verify). Exits 1 when an object
differs, is missing or cannot be read.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return runS3Verify(cmd.Context(), o, id, stdout)
		},
	}
	f := cmd.Flags()
	dbFlag(f, &o.DB)
	f.BoolVar(&o.JSON, "json", false, "print JSON")
	flagval.SecretVar(f, &o.AccessKey, "access-key", "access key (default: AWS_ACCESS_KEY_ID or the shared credentials file)")
	flagval.SecretVar(f, &o.SecretKey, "secret-key", "secret key (default: AWS_SECRET_ACCESS_KEY)")
	f.BoolVar(&o.Insecure, "insecure", false, "accept any TLS certificate")
	f.StringVar(&o.CA, "ca", "", "PEM file of CA certificates to trust besides the system's, as iolab s3's --ca")
	f.StringVar(&o.Region, "region", "", "the signing region (default: the run's)")
	f.StringVar(&o.Lookup, "lookup", "", "bucket addressing: auto, path or dns (default: the run's)")
	flagval.IntVar(f, &o.Concurrency, "concurrency", 16, 1, flagval.MaxConcurrency, "objects read at once")
	o.Timeout, o.Retries = s3.DefaultTimeout, s3.DefaultRetries
	f.Var(flagval.Duration{P: &o.Timeout}, "timeout", "bound on each request, as iolab s3's --timeout (0: none)")
	flagval.IntVar(f, &o.Retries, "retries", o.Retries, 0, 10, "times a request that failed in a way that may pass is sent again, as iolab s3's --retries")
	return cmd
}

// verifiedCell is the outcome for one cell of the experiment.
type verifiedCell struct {
	Cell       string   `json:"cell"`
	Target     string   `json:"target"`
	Checked    int64    `json:"checked"`
	Mismatched int64    `json:"mismatched"`
	Missing    int64    `json:"missing"`
	Unreadable int64    `json:"unreadable"`
	First      []string `json:"first,omitempty"`
}

func runS3Verify(ctx context.Context, o S3VerifyOptions, id string, stdout io.Writer) error {
	if o.Lookup != "" && o.Lookup != "auto" && o.Lookup != "path" && o.Lookup != "dns" {
		return usage("--lookup %q: want auto, path or dns", o.Lookup)
	}
	st, err := openExisting(ctx, o.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	d, err := st.Load(ctx, id)
	if err != nil {
		return err
	}
	objs, err := st.Objects(ctx, d.Experiment.ID)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		return usage("experiment %s left no objects in place; run iolab s3 with --keep to verify them later", d.Experiment.ID)
	}
	var out []verifiedCell
	bad := int64(0)
	for _, c := range d.Cells {
		kept := s3.KeptCell{Params: c.Params}
		for _, x := range objs {
			if x.CellID == c.ID {
				kept.Objects = append(kept.Objects, workload.Object{Key: x.Key, Size: x.Size, Seed: x.Seed})
				kept.ContentSeed = x.ContentSeed
			}
		}
		if len(kept.Objects) == 0 {
			continue
		}
		v, err := s3.VerifyKept(ctx, o.VerifyFlags, kept)
		if err != nil {
			return err
		}
		// Kept the moment it is known, a check cut short too, saying so.
		rec := store.Verify{CellID: c.ID, At: time.Now(), By: "s3 verify", Target: kept.Target(), Checked: v.Checked,
			Mismatched: v.Mismatched, Missing: v.Missing, Unreadable: v.Unreadable, First: v.Bad, Interrupted: ctx.Err() != nil}
		if err := st.SaveVerify(ctx, d.Experiment.ID, rec); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("verify %w after %d of %d objects of %s (what it found is stored)", lab.ErrInterruptedPhase, v.Checked, len(kept.Objects), c.Name)
		}
		bad += v.Failed()
		out = append(out, verifiedCell{Cell: c.Name, Target: redact.String(rec.Target), Checked: v.Checked, Mismatched: v.Mismatched,
			Missing: v.Missing, Unreadable: v.Unreadable, First: v.Bad})
	}
	if err := printVerified(stdout, d.Experiment.ID, out, o.JSON); err != nil {
		return err
	}
	if bad > 0 {
		return fmt.Errorf("experiment %s: %d objects differ, are missing or cannot be read", d.Experiment.ID, bad)
	}
	return nil
}

func printVerified(stdout io.Writer, id string, out []verifiedCell, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"experiment": id, "verify": out})
	}
	for _, v := range out {
		fmt.Fprintf(stdout, "%s: %d objects checked, %d differ, %d missing, %d unreadable", v.Cell, v.Checked, v.Mismatched, v.Missing, v.Unreadable)
		if len(v.First) > 0 {
			fmt.Fprintf(stdout, "; first: %s", strings.Join(v.First, ", "))
		}
		fmt.Fprintln(stdout)
	}
	return nil
}
