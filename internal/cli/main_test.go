package cli

import (
	"os"
	"os/exec"
	"testing"
)

// iolabInTestEnv, when set in its environment, makes the test binary run
// as iolab itself (its arguments after the flag are iolab's): a process
// of iolab that knows the kinds only this package's tests register, to
// kill -9 and resume.
const iolabInTestEnv = "IOLAB_TEST_AS_IOLAB"

func TestMain(m *testing.M) {
	if os.Getenv(iolabInTestEnv) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// testIolab is a command running the test binary as iolab.
func testIolab(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), iolabInTestEnv+"=1")
	return cmd
}
