package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// creates are the commands that create a store that is not there.
var creates = []string{"bisect", "cmd", "experiment", "frames", "fs", "download", "upload", "import", "run", "s3", "tick"}

// pathFlags are the flags that take a path iolab writes (or, --db, opens
// or creates).
var pathFlags = []string{"db", "lat-log", "export-json", "export-csv", "export-markdown", "html", "output", "pprof"}

// Every command that takes a path, each such flag: a path in a directory
// that is not there, and an output path over a file iolab did not write,
// are refused before anything runs — one line naming the flag and the
// path, exit 2, as docs/commands.md says (issue 45 item 4). The commands
// come from the command tree, so a new one without a line in minimal
// fails here.
func TestEveryPathIsCheckedBeforeAnythingRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "good.db")
	if _, stderr, err := iolab(t, ctx, "cmd", "true", "--rounds", "1", "--warmup", "0", "--db", db, "-q"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	ls, _, err := iolab(t, ctx, "ls", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct{ ID string }
	decodeInto(t, ls, &list)
	if len(list) != 1 {
		t.Fatalf("ls: %s", ls)
	}
	exp := list[0].ID
	_, gitPlan := bisectRepo(t, 2, 0, func(int) float64 { return 1 }, nil)
	writeFiles(t, dir, map[string]string{"plan.yaml": "variants: [{name: a}]\nworkloads: [{cmd: {run: 'true'}}]\n", "foreign.txt": "not iolab's\n"})
	foreign := filepath.Join(dir, "foreign.txt")
	// What each command needs besides the path to get as far as using it.
	minimal := map[string][]string{
		"iolab bisect":        {"bisect", gitPlan, "--good", "main~1", "--bad", "main"},
		"iolab cmd":           {"cmd", "true"},
		"iolab compare":       {"compare", exp, exp},
		"iolab experiment":    {"experiment", filepath.Join(dir, "plan.yaml")},
		"iolab frames":        {"frames", "--directory", dir, "--profile", "FULLHD-24bit", "--frames", "2"},
		"iolab fs":            {"fs", "--directory", dir, "--size", "64k"},
		"iolab history":       {"history"},
		"iolab http download": {"http", "download", "--url", "http://127.0.0.1:1/x", "--count", "1"},
		"iolab http upload":   {"http", "upload", "--url", "http://127.0.0.1:1/x", "--count", "1", "--size", "1k"},
		"iolab import":        {"import", db},
		"iolab ls":            {"ls"},
		"iolab note":          {"note", exp, "a note"},
		"iolab report":        {"report", exp},
		"iolab rm":            {"rm", exp},
		"iolab run":           {"run"},
		"iolab s3":            {"s3", "--endpoint", "http://127.0.0.1:1", "--bucket", "b", "--count", "1"},
		"iolab s3 verify":     {"s3", "verify", exp},
		"iolab show":          {"show", exp},
		"iolab tick":          {"tick", "--ticks", "1"},
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		var flags []string
		named := map[string]string{} // how the message names the flag
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if slices.Contains(pathFlags, f.Name) {
				flags = append(flags, f.Name)
				named[f.Name] = "--" + f.Name
				if f.Shorthand != "" {
					named[f.Name] = "-" + f.Shorthand
				}
			}
		})
		if len(flags) == 0 {
			return
		}
		args, ok := minimal[c.CommandPath()]
		if !ok {
			t.Errorf("%s takes %v: give it a line in minimal", c.CommandPath(), flags)
			return
		}
		for _, flag := range flags {
			missing := filepath.Join(dir, "nope", flag+".out")
			want := "no directory " + filepath.Dir(missing)
			if flag == "db" && !slices.Contains(creates, c.Name()) {
				want = "no such database" // a command that reads a store
			}
			tries := [][2]string{{missing, want}}
			if flag != "db" {
				tries = append(tries, [2]string{foreign, "did not write"})
			}
			for _, try := range tries {
				run := append(slices.Clone(args), "--"+flag, try[0])
				if flag != "db" {
					run = append(run, "--db", db)
				}
				if flag == "pprof" {
					run = append(run, "--profile")
				}
				_, _, err := iolab(t, ctx, run...)
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				if err == nil || ExitCode(err) != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, named[flag]+" ") || !strings.Contains(msg, try[1]) {
					t.Errorf("iolab %s: %q (exit %d), want one line naming %s and %q, exit 2", strings.Join(run, " "), msg, ExitCode(err), named[flag], try[1])
				}
			}
		}
	}
	walk(NewRoot(&strings.Builder{}, &strings.Builder{}))
	if b, err := os.ReadFile(foreign); err != nil || string(b) != "not iolab's\n" {
		t.Errorf("the foreign file was written: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); err == nil {
		t.Error("a directory that was not there was made")
	}
}
