// Package cli holds iolab's subcommands, one file each. Every subcommand
// has an Options struct, an AddFlags method and a run function that takes a
// context and the output writers and never exits the process, so tests call
// it directly.
package cli

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/workload"
	_ "github.com/iolab/iolab/internal/workload/all" // every workload kind iolab has
)

// UsageError is bad input: an unknown flag or value, a missing path. It
// exits with status 2.
type UsageError = badinput.Error

func usage(format string, args ...any) error { return badinput.Errorf(format, args...) }

// ExitCode maps an error to the process exit status: 0 success, 2 usage
// error, 130 interrupted (finished runs are kept), 1 any other failure.
func ExitCode(err error) int {
	var ie *workload.InputError
	switch {
	case err == nil:
		return 0
	case badinput.Is(err), errors.As(err, &ie),
		errors.Is(err, store.ErrNoExperiment), errors.Is(err, store.ErrAmbiguousID):
		return 2
	case errors.Is(err, lab.ErrInterrupted):
		return 130
	}
	return 1
}

// Execute runs iolab with args. Everything it prints goes through
// redact.Writer, and the message of the error it returns through
// redact.String, so a secret it learned never reaches the terminal.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := NewRoot(redact.Writer(stdout), redact.Writer(stderr))
	args = hyperfineArgs(args)
	root.SetArgs(args)
	// Asked for help, cobra shows the root's for a command it does not
	// know (exit 0): an unknown command is said as one, help or not.
	if c, rest, err := root.Find(args); err == nil && c == root && slices.ContainsFunc(args, func(a string) bool { return a == "--help" || a == "-h" }) {
		if i := slices.IndexFunc(rest, func(a string) bool { return !strings.HasPrefix(a, "-") }); i >= 0 {
			return scrubbedError{unknownCommand(root, rest[i:])}
		}
	}
	if err := root.ExecuteContext(ctx); err != nil {
		return scrubbedError{err}
	}
	return nil
}

// scrubbedError shows an error's message with its secrets masked; errors.Is
// and errors.As see the error inside.
type scrubbedError struct{ err error }

func (e scrubbedError) Error() string { return redact.String(e.err.Error()) }
func (e scrubbedError) Unwrap() error { return e.err }

// NewRoot builds the command tree.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "iolab",
		Short:         "A storage performance lab: repeatable I/O workloads with honest statistics",
		Version:       Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          unknownCommand,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetVersionTemplate("iolab {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newK8sCommand(stdout), newSlurmCommand(stdout))
	root.AddCommand(newFSCommand(stdout, stderr), newS3Command(stdout, stderr), newHTTPCommand(stdout, stderr), newFramesCommand(stdout, stderr), newRunCommand(stdout, stderr), newExperimentCommand(stdout, stderr), newBisectCommand(stdout, stderr),
		newShowCommand(stdout, stderr), newCompareCommand(stdout), newHistoryCommand(stdout), newReportCommand(stdout), newNoteCommand(stdout), newRmCommand(stdout), newImportCommand(stdout), newLsCommand(stdout), newEnvCommand(stdout), newBuildsCommand(stdout), newVersionCommand(stdout))
	root.AddCommand(kindCommands(root, stdout, stderr)...)
	root.AddCommand(&cobra.Command{Use: "reference", Short: "Print docs/reference.md: every command, flag and plan key", Hidden: true, Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return WriteReference(stdout) }})
	silence(root)
	return root
}

// silence makes every command leave errors and usage to Execute's caller,
// and turns cobra's argument-count errors into usage errors (exit 2).
func silence(c *cobra.Command) {
	c.SilenceUsage, c.SilenceErrors = true, true
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			var ue *UsageError
			if err != nil && !errors.As(err, &ue) {
				return usage("%s: %v; usage: %s", cmd.CommandPath(), err, cmd.UseLine())
			}
			return err
		}
	}
	for _, sub := range c.Commands() {
		silence(sub)
	}
}

// unknownCommand is the Args check of a command that only groups others:
// any argument is a command that does not exist.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return usage("unknown command %q for %q; commands: %s", args[0], cmd.CommandPath(), strings.Join(names, ", "))
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
