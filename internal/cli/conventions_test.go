package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestUnknownCommandsAndArguments: a typo is an error (exit 2), never help
// with exit 0; so is a wrong number of arguments.
func TestUnknownCommandsAndArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"foo"}, `unknown command "foo" for "iolab"; commands: `},
		{[]string{"capacity", "--help"}, `unknown command "capacity" for "iolab"; commands: `}, // not the root's help, exit 0
		{[]string{"http", "sideways"}, `unknown command "sideways" for "iolab http"; commands: download, upload`},
		{[]string{"experiment"}, "iolab experiment: accepts 1 arg(s), received 0; usage: iolab experiment PLAN.yaml"},
		{[]string{"show", "a", "b"}, "accepts at most 1 arg(s), received 2"},
		{[]string{"compare", "a"}, "iolab compare: accepts 2 arg(s), received 1"},
		{[]string{"s3", "verify", "a", "b"}, "accepts at most 1 arg(s), received 2"},
		{[]string{"version", "x"}, `unexpected argument "x"`},
	} {
		_, _, err := iolab(t, context.Background(), tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || ExitCode(err) != 2 {
			t.Errorf("%v: %v (exit %d), want exit 2 with %q", tc.args, err, ExitCode(err), tc.want)
		}
	}
	// With no arguments at all, help is what the user asked for; and
	// asked for.
	for _, args := range [][]string{nil, {"--help"}, {"fs", "--help"}} {
		out, _, err := iolab(t, context.Background(), args...)
		if err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("iolab %v: %v, %q", args, err, out)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	want := regexp.MustCompile(`^iolab \S+ \((commit [0-9a-f]+(, modified)?|commit unknown)\)\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, _, err := iolab(t, context.Background(), args...)
		if err != nil || !want.MatchString(out) {
			t.Errorf("%v: %v, %q; want %s", args, err, out, want)
		}
	}
}

// TestExperimentIDsAndDatabase: IOLAB_DB sets the default database, the
// show hint repeats a --db that is not the default, IDs match by prefix
// and suffix, and an ID that matches nothing or several is exit 2.
func TestExperimentIDsAndDatabase(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"plan.yaml": "rounds: 1\nwarmup: 0\nworkloads:\n  - cmd: {run: 'true'}\n"})
	plan := filepath.Join(dir, "plan.yaml")
	ctx := context.Background()

	envDB := filepath.Join(dir, "from env.db")
	t.Setenv("IOLAB_DB", envDB)
	out, _, err := iolab(t, ctx, "experiment", plan)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(envDB); err != nil {
		t.Fatalf("IOLAB_DB was not the default database: %v", err)
	}
	m := regexp.MustCompile("as experiment (\\S+); `iolab show (\\S+)` prints this again").FindStringSubmatch(out)
	if m == nil || m[1] != m[2] {
		t.Fatalf("the hint for the default database has no --db: %q", out)
	}
	first := m[1]

	other := filepath.Join(dir, "other.db")
	out, _, err = iolab(t, ctx, "experiment", plan, "--db", other)
	if err != nil {
		t.Fatal(err)
	}
	if want := "`iolab show "; !strings.Contains(out, " --db "+other+"`") || !strings.Contains(out, want) {
		t.Fatalf("the hint does not repeat --db %s: %q", other, out)
	}

	// Prefix and suffix of the first experiment's ID.
	for _, id := range []string{first[:17], first[len(first)-4:]} {
		out, _, err := iolab(t, ctx, "show", id)
		if err != nil || !strings.Contains(out, first) {
			t.Errorf("show %s: %v\n%s", id, err, out)
		}
	}
	if _, _, err := iolab(t, ctx, "show", "nothing-like-it"); err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "no such experiment") {
		t.Errorf("show of an unknown ID: %v (exit %d)", err, ExitCode(err))
	}
	// A second experiment in the same database shares the date prefix.
	if _, _, err := iolab(t, ctx, "experiment", plan); err != nil {
		t.Fatal(err)
	}
	if _, _, err := iolab(t, ctx, "show", first[:4]); err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("show of an ambiguous ID: %v (exit %d)", err, ExitCode(err))
	}
}

// TestHelpShowsEachCommandItsOwn: the flags that run a segment of a load
// appear on the commands whose load splits and nowhere else; every default
// is said once; no flag's value name is made up from its help text.
func TestHelpShowsEachCommandItsOwn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		segments bool
	}{
		{[]string{"fs"}, true}, {[]string{"s3"}, true}, {[]string{"http", "upload"}, true}, {[]string{"frames"}, true},
		{[]string{"experiment"}, true}, {[]string{"cmd"}, false}, {[]string{"run"}, false},
	} {
		help, _, err := iolab(t, context.Background(), append(tc.args, "--help")...)
		if err != nil {
			t.Fatal(err)
		}
		if got := regexp.MustCompile(`(?m)^ +--segment `).MatchString(help); got != tc.segments {
			t.Errorf("%v: --segment in its help: %v, want %v", tc.args, got, tc.segments)
		}
		for _, line := range strings.Split(help, "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("%v: a default said twice: %s", tc.args, line)
			}
			if strings.Contains(line, "--note ") && !strings.Contains(line, "--note string") {
				t.Errorf("%v: --note's value name: %s", tc.args, line)
			}
		}
	}
}
