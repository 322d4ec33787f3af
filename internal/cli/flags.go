package cli

import (
	"errors"
	"strings"

	"github.com/spf13/pflag"
)

// The value types of flags and plan keys live in flagval; here is how a
// refused value reaches the user.

// flagError rewrites pflag's "invalid argument" errors into iolab's one
// form, `--flag "value": why; want ...`, a usage error.
func flagError(err error) error {
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		return usage("--%s %q: %v", iv.GetFlag().Name, iv.GetValue(), iv.Unwrap())
	}
	// pflag quotes nothing: an argument with a line break in it must not
	// break the one-line message.
	return usage("%s", strings.ReplaceAll(err.Error(), "\n", `\n`))
}
