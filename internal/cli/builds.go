package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/variant"
)

func newBuildsCommand(stdout io.Writer) *cobra.Command {
	var clear, asJSON bool
	cmd := &cobra.Command{
		Use:   "builds",
		Short: "List the build cache (git variants' builds kept across experiments and bisects), or clear it",
		Long: `A git variant's build is kept, by its repository, commit, build command, workdir, env and the
environment its build command names, and copied into the next experiment's checkout of the same
instead of building again. ` + variant.CacheEnv + ` is its directory (off: none; default the
user's cache directory's iolab/builds, without one the temporary directory's iolab-builds-UID),
` + variant.CacheSizeEnv + ` its bound (default 4g: the entries used longest ago go first).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := variant.DefaultCache()
			if err != nil {
				return usage("%v", err)
			}
			if c == nil {
				return usage("%s=off: no build cache to list or clear", variant.CacheEnv)
			}
			if clear {
				n, err := c.Clear()
				if err == nil {
					fmt.Fprintf(stdout, "%d builds removed from %s\n", n, c.Dir)
				}
				return err
			}
			entries, err := c.List()
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"dir": c.Dir, "max_bytes": c.Max, "builds": entries})
			}
			total := int64(0)
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "commit\tvariant\tsize\tused\trepository\tbuild")
			for _, e := range entries {
				total += e.Bytes
				fmt.Fprintf(tw, "%.10s\t%s\t%s\t%s\t%s\t%s\n", e.Commit, e.Variant, units.FormatSize(e.Bytes), e.Used.Format(time.DateTime), e.Repo, strings.Join(strings.Fields(e.Build), " "))
			}
			tw.Flush()
			fmt.Fprintf(stdout, "%d builds, %s of %s, in %s\n", len(entries), units.FormatSize(total), units.FormatSize(c.Max), c.Dir)
			return nil
		},
	}
	cmd.Flags().BoolVar(&clear, "clear", false, "remove every cached build")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
