// Package cli holds iolab's subcommands, one file each. Every subcommand
// has an Options struct, an AddFlags method and a run function that takes a
// context and the output writers and never exits the process, so tests call
// it directly.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/workload"
)

// UsageError is bad input: an unknown flag or value, a missing path. It
// exits with status 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usage(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ExitCode maps an error to the process exit status: 0 success, 2 usage
// error, 130 interrupted (finished runs are kept), 1 any other failure.
func ExitCode(err error) int {
	var ue *UsageError
	var ie *workload.InputError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue), errors.As(err, &ie):
		return 2
	case errors.Is(err, lab.ErrInterrupted):
		return 130
	}
	return 1
}

// Execute runs iolab with args.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := NewRoot(stdout, stderr)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// NewRoot builds the command tree.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "iolab",
		Short:         "A storage performance lab: repeatable I/O workloads with honest statistics",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	root.AddCommand(newFSCommand(stdout, stderr), newS3Command(stdout, stderr), newHTTPCommand(stdout, stderr), newFramesCommand(stdout, stderr), newRunCommand(stdout, stderr), newExperimentCommand(stdout, stderr),
		newShowCommand(stdout), newLsCommand(stdout), newEnvCommand(stdout))
	for _, c := range root.Commands() {
		c.SilenceUsage, c.SilenceErrors = true, true
	}
	return root
}

// noArgs rejects positional arguments with a hint, because fio's
// "--direct 1" form would otherwise be silently misread.
// maxOneArg allows one argument (a file) and names any extra one.
func maxOneArg(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return usage("%s: unexpected argument %q after %q; flags take values as --flag=value (e.g. --direct=1)",
			cmd.CommandPath(), args[1], args[0])
	}
	return nil
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usage("%s: unexpected argument %q; flags take values as --flag=value (e.g. --direct=1)", cmd.CommandPath(), args[0])
	}
	return nil
}
