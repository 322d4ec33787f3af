package cli

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/variant"
	"github.com/iolab/iolab/internal/workload/fs"
)

// iolabInTestEnv, when set in its environment, makes the test binary run
// as iolab itself (its arguments after the flag are iolab's): a process
// of iolab that knows the kinds only this package's tests register, to
// kill -9 and resume.
const iolabInTestEnv = "IOLAB_TEST_AS_IOLAB"

func TestMain(m *testing.M) {
	fs.ServeJobIfAsked() // a run's fs jobs run as processes of this binary
	if os.Getenv(iolabInTestEnv) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	// The tests' builds are cached apart from the user's, and go with them.
	if os.Getenv(variant.CacheEnv) == "" {
		dir, err := os.MkdirTemp("", "iolab-test-builds-")
		if err != nil {
			panic(err)
		}
		os.Setenv(variant.CacheEnv, dir)
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// testIolab is a command running the test binary as iolab.
func testIolab(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), iolabInTestEnv+"=1")
	return cmd
}

// An error that names its command is printed as it is, not behind a
// second "iolab: "; one that does not gets the prefix.
func TestErrorPrefixedOnce(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/x.db"
	if out, err := testIolab("fs", "--directory", t.TempDir(), "--size=64k", "--rounds=1", "--warmup=0", "-q", "--db", db).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"note", "2", " "}, "iolab note: an empty note; give the text to add\n"},
		{[]string{"note", "2"}, "iolab note: accepts 2 arg(s), received 1; usage: iolab note EXPERIMENT TEXT [flags]\n"},
		{[]string{"fs", "--zzzz", "1"}, "iolab: unknown flag: --zzzz\n"},
	} {
		out, _ := testIolab(append(c.args, "--db", db)...).CombinedOutput()
		if !strings.HasSuffix(string(out), c.want) || strings.Contains(string(out), "iolab: iolab") {
			t.Errorf("%q: %q, want it to end %q", c.args, out, c.want)
		}
	}
}
