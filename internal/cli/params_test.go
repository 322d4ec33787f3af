package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/plan"
)

// hyperfine's -L NAME VALUES and -P NAME MIN MAX are words of their own
// on its command line; they are joined for the flags, and nothing else is.
func TestHyperfineArgs(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"cmd", "-L", "n", "1,2", "sleep {n}"}, []string{"cmd", "-L", "n 1,2", "sleep {n}"}},
		{[]string{"cmd", "--parameter-scan", "t", "1", "8", "make -j{t}", "-n", "x"}, []string{"cmd", "--parameter-scan", "t 1 8", "make -j{t}", "-n", "x"}},
		{[]string{"cmd", "-L", "n 1,2", "a"}, []string{"cmd", "-L", "n 1,2", "a"}},         // given as one word
		{[]string{"cmd", "-P", "t", "1"}, []string{"cmd", "-P", "t", "1"}},                 // too few words: the flag's error
		{[]string{"cmd", "--", "-L", "n", "1,2"}, []string{"cmd", "--", "-L", "n", "1,2"}}, // after --
		{[]string{"cmd", "-L", "9x", "1,2", "a"}, []string{"cmd", "-L", "9x", "1,2", "a"}}, // not a name
		{[]string{"cmd", "-N", "a b"}, []string{"cmd", "--shell=none", "a b"}},             // hyperfine's -N
		{[]string{"fs", "-N"}, []string{"fs", "-N"}},                                       // cmd's alone
	} {
		if got := hyperfineArgs(c.in); !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

func TestScanValues(t *testing.T) {
	for _, c := range []struct {
		lo, hi, step string
		want         string
	}{
		{"1", "4", "", "1 2 3 4"},
		{"0", "0", "", "0"},
		{"-2", "1", "", "-2 -1 0 1"},
		{"0.1", "0.3", "0.1", "0.1 0.2 0.3"}, // MAX reached through the step's rounding
		{"0.05", "0.25", "0.1", "0.05 0.15 0.25"},
		{"1", "2", "0.3", "1.0 1.3 1.6 1.9"},
		{"0", "10", "5", "0 5 10"},
	} {
		got, err := scanValues(c.lo, c.hi, c.step, c.step != "")
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("%s %s -D %q: %q, %v; want %s", c.lo, c.hi, c.step, got, err, c.want)
		}
	}
	for _, c := range []struct{ lo, hi, step, want string }{
		{"1", "x", "", `MAX "x" is not a number`},
		{"0.1", "1", "", "MIN 0.1 is not a whole number; give -D STEP"},
		{"3", "1", "", "MAX 1 is below MIN 3"},
		{"1", "2", "0", "--parameter-step-size \"0\": want a number above 0"},
		{"1", "1000", "", "1000 values"},
		{"1", "NaN", "", `MAX "NaN" is not a number`},
	} {
		_, err := scanValues(c.lo, c.hi, c.step, c.step != "")
		if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%s %s -D %q: %v, want %q", c.lo, c.hi, c.step, err, c.want)
		}
	}
}

// Every argument at every combination of values, the last parameter's
// changing fastest, {NAME} filled in the command and its name; names that
// would not tell commands apart say their values.
func TestExpandParameters(t *testing.T) {
	axes := []plan.Key{{Name: "n", Values: []string{"1", "2"}}, {Name: "c", Values: []string{"gcc", "clang"}}}
	args, names, err := expand([]string{"{c} -O{n} x.c", "tcc x.c"}, []string{"{c} -O{n}", "tcc"}, axes)
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"gcc -O1 x.c", "clang -O1 x.c", "gcc -O2 x.c", "clang -O2 x.c", "tcc x.c", "tcc x.c", "tcc x.c", "tcc x.c"}
	if !slices.Equal(args, wantArgs) {
		t.Errorf("commands %q, want %q", args, wantArgs)
	}
	if names[0] != "gcc -O1 (n=1, c=gcc)" || names[4] != "tcc (n=1, c=gcc)" || names[7] != "tcc (n=2, c=clang)" {
		t.Errorf("names %q: each, once any two are alike, says its values", names)
	}
	_, names, _ = expand([]string{"sleep {n}"}, []string{"sleep {n}"}, axes[:1])
	if !slices.Equal(names, []string{"sleep 1", "sleep 2"}) {
		t.Errorf("names %q: told apart by their commands, they say nothing more", names)
	}
	many := []plan.Key{{Name: "a", Values: strings.Split("1,2,3,4,5,6,7,8,9,10,11", ",")}, {Name: "b", Values: strings.Split("1,2,3,4,5,6,7,8,9,10", ",")}}
	if _, _, err := expand([]string{"x"}, []string{"x"}, many); ExitCode(err) != 2 || !strings.Contains(err.Error(), "110 commands") {
		t.Errorf("110 combinations: %v", err)
	}
}

// hyperfine's parameters through the command line: each value a variant of
// its own, run with the value in its command, compared with the first;
// what cannot be a scan is refused before anything runs.
func TestParameterListAndScan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	out, stderr, err := iolab(t, context.Background(), "cmd", "-L", "word", "a,b", "-P", "k", "1", "2",
		"echo {word} >> "+dir+"/{word}{k}", "--runs", "1", "--warmup", "0", "--db", db, "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var r struct {
		Runs []struct{ Variant string }
	}
	decodeInto(t, out, &r)
	var seen []string
	for _, run := range r.Runs {
		seen = append(seen, run.Variant)
	}
	slices.Sort(seen)
	want := []string{"echo a >> " + dir + "/a1", "echo a >> " + dir + "/a2", "echo b >> " + dir + "/b1", "echo b >> " + dir + "/b2"}
	if !slices.Equal(seen, want) {
		t.Errorf("variants run %q, want %q", seen, want)
	}
	for _, f := range []string{"a1", "a2", "b1", "b2"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != f[:1]+"\n" {
			t.Errorf("%s: %q, %v: the command ran with its values once", f, b, err)
		}
	}
	for _, c := range []struct{ args, want string }{
		{"cmd -P n 0.1 0.3 x{n}", "MIN 0.1 is not a whole number"},
		{"cmd -D 0.1 x", "--parameter-step-size 0.1: the step of --parameter-scan; give both"},
		{"cmd -L n x{n}", "no command is left as an argument"},
		{"cmd -L n 1 -L n 2 x", "--parameter-list n: a parameter of that name is given already"},
		{"cmd --run true -P n 1 2", "no command is left as an argument"},
	} {
		_, _, err := iolab(t, context.Background(), append(strings.Fields(c.args), "--db", db)...)
		if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%s: %v (exit %d), want %q", c.args, err, ExitCode(err), c.want)
		}
	}
	if n := countRows(t, db, `SELECT count(*) FROM experiments`); n != 1 {
		t.Errorf("%d experiments stored, want the one that ran", n)
	}
}
