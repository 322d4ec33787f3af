package cli

import (
	"errors"
	"strings"

	"github.com/iolab/iolab/internal/suggest"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The value types of flags and plan keys live in flagval; here is how a
// refused value reaches the user.

// flagError rewrites pflag's "invalid argument" errors into iolab's one
// form, `--flag "value": why; want ...`, a usage error.
func flagError(cmd *cobra.Command, err error) error {
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		return usage("--%s %q: %v", iv.GetFlag().Name, iv.GetValue(), iv.Unwrap())
	}
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok && cmd != nil {
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
		if near := suggest.Closest(name, names); near != "" {
			return usage("unknown flag: --%s; did you mean --%s? (iolab %s --help lists them)", name, near, strings.TrimPrefix(cmd.CommandPath(), "iolab "))
		}
	}
	// pflag quotes nothing: an argument with a line break in it must not
	// break the one-line message.
	return usage("%s", strings.ReplaceAll(err.Error(), "\n", `\n`))
}
