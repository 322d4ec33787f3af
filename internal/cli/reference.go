package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/workload"
)

// WriteReference writes docs/reference.md (iolab reference, a hidden
// command): every command with its flags, and every plan key — made from
// the command tree and the registry of kinds, so it cannot drift from what
// iolab accepts (a test compares the file with what the built iolab
// writes: a test binary has kinds of its own).
func WriteReference(w io.Writer) error {
	root := NewRoot(io.Discard, io.Discard)
	fmt.Fprint(w, "# Reference\n\nEvery command and flag, and every plan key, as this iolab accepts them. ")
	fmt.Fprint(w, "Made from the command tree and the registry of workload kinds by `go run ./cmd/iolab reference > docs/reference.md`; ")
	fmt.Fprint(w, "a test fails when it is out of date.\n\n## Commands\n\n")
	var commands []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.Name() == "completion" {
				continue
			}
			if sub.Runnable() {
				commands = append(commands, sub)
			}
			walk(sub)
		}
	}
	walk(root)
	for _, c := range commands {
		fmt.Fprintf(w, "- [`%s`](#%s) — %s\n", c.CommandPath(), anchor(c.CommandPath()), c.Short)
	}
	for _, c := range commands {
		fmt.Fprintf(w, "\n### %s\n\n%s\n\n```\n%s\n", c.CommandPath(), c.Short, c.UseLine())
		if flags := c.NonInheritedFlags(); flags.HasAvailableFlags() {
			fmt.Fprintf(w, "\n%s", flags.FlagUsagesWrapped(100))
		}
		fmt.Fprint(w, "```\n")
	}
	fmt.Fprint(w, "\n## Plan keys\n\n")
	fmt.Fprintf(w, "A plan's top level: %s.\n\n", codeList(plan.PlanKeys))
	fmt.Fprintf(w, "A variant: %s.\n\n", codeList(plan.VariantKeys))
	fmt.Fprintf(w, "hooks: %s.\n\n", codeList(plan.HookKeys))
	fmt.Fprintf(w, "A workload's `curve:` is a list of loads in percent of its flat-out rate (`[10, 50, 90]`); its `slo:` takes %s ([capacity](capacity.md)).\n\n", codeList(plan.SLOKeys))
	fmt.Fprintf(w, "A workload: %s, and one kind — %s — whose keys are its command's flags:\n", codeList(plan.WorkloadKeys), codeList(workload.Names()))
	for _, kind := range workload.Kinds() {
		flags := pflag.NewFlagSet(kind.Name, pflag.ContinueOnError)
		kind.NewOptions().AddFlags(flags)
		fmt.Fprintf(w, "\n### %s: {...}\n\n%s.", kind.Name, kind.Short)
		if len(kind.Templates) > 0 {
			fmt.Fprintf(w, " Templates it fills itself: %s.", codeList(templates(kind.Templates)))
		}
		if kind.OutputMetrics {
			fmt.Fprint(w, " Takes `metrics:` (figures read from its output).")
		}
		fmt.Fprintf(w, "\n\n| key | value | meaning |\n|---|---|---|\n")
		flags.VisitAll(func(f *pflag.Flag) {
			name, usage := pflag.UnquoteUsage(f)
			if name == "" {
				name = "bool"
			}
			fmt.Fprintf(w, "| `%s` | %s | %s |\n", f.Name, name, strings.ReplaceAll(usage, "|", `\|`))
		})
	}
	return nil
}

func anchor(s string) string { return strings.ReplaceAll(strings.ToLower(s), " ", "-") }

func codeList(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = "`" + s + "`"
	}
	return strings.Join(out, ", ")
}

func templates(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "{{" + n + "}}"
	}
	return out
}
