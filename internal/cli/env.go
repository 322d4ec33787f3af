package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/envinfo"
)

func newEnvCommand(stdout io.Writer) *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Print the environment iolab records with every experiment",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEnv(cmd.Context(), dir, asJSON, stdout)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "path whose filesystem and device to describe")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func runEnv(_ context.Context, dir string, asJSON bool, stdout io.Writer) error {
	s := envinfo.Capture(dir)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	line := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	line("host", "%s", s.Hostname)
	line("kernel", "%s", s.Kernel)
	line("cpu", "%d x %s", s.CPUs, s.CPUModel)
	line("governor", "%s", orNone(s.Governor, "not exposed (no cpufreq; common in VMs)"))
	if s.FreqMHz > 0 {
		line("frequency", "%.0f MHz (mean of current)", s.FreqMHz)
	}
	line("thermal throttles", "%d", s.ThrottleCount)
	switch s.SchedAutogroup {
	case "1":
		line("autogroup", "on: the CPU is shared between sessions first (a process per job, in a session of its own, takes a session's share)")
	case "0":
		line("autogroup", "off")
	}
	line("memory", "%d MiB available of %d MiB", s.MemAvailableBytes>>20, s.MemTotalBytes>>20)
	line("swap", "%d MiB free of %d MiB; %d pages in, %d out since boot", s.SwapFreeBytes>>20, s.SwapTotalBytes>>20, s.SwapIns, s.SwapOuts)
	line("pressure (avg10)", "cpu %.2f%%  memory %.2f%%  io %.2f%%", s.PressureCPU, s.PressureMemory, s.PressureIO)
	line("load", "%.2f %.2f %.2f", s.Load1, s.Load5, s.Load15)
	if t := s.Target; t != nil {
		line("target", "%s", t.Path)
		line("filesystem", "%s on %s (mounted at %s, %s)", t.FSType, t.Source, t.MountPoint, t.MountOptions)
		line("free space", "%d MiB of %d MiB", t.FreeBytes>>20, t.TotalBytes>>20)
		if t.Device != "" {
			rot := "not exposed"
			if t.Rotational != nil {
				rot = "0 (solid state)"
				if *t.Rotational {
					rot = "1 (says spinning disk; VM disks often say 1 wrongly: a direct random read tells)"
				}
			}
			line("device", "%s %s, scheduler %s", t.Device, orNone(t.Model, "(no model exposed)"), orNone(t.Scheduler, "-"))
			line("rotational", "%s", rot)
		}
	}
	line("iolab", "%s %s (%s)", s.IolabVersion, s.IolabCommit, s.GoVersion)
	return tw.Flush()
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}
