package cli

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is iolab's module version and the commit it was built from, as
// the Go toolchain recorded them ("(devel)" and "commit unknown" for a
// build without module or VCS information, e.g. with -buildvcs=false).
func Version() string {
	version, commit, dirty := "(devel)", "commit unknown", ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" {
			version = v
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision":
				commit = "commit " + s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				dirty = ", modified"
			}
		}
	}
	return fmt.Sprintf("%s (%s%s)", version, commit, dirty)
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print iolab's version and the commit it was built from",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(stdout, "iolab %s\n", Version())
			return err
		},
	}
}
