package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
)

// iolabInTestEnv, when set in its environment, makes the test binary run
// as iolab itself (its arguments after the flag are iolab's): a process
// of iolab that knows the kinds only this package's tests register, to
// kill -9 and resume.
const iolabInTestEnv = "IOLAB_TEST_AS_IOLAB"

func TestMain(m *testing.M) {
	if os.Getenv(iolabInTestEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		if err != nil { // as cmd/iolab says it
			fmt.Fprintf(os.Stderr, "iolab: %v\n", err)
		}
		os.Exit(ExitCode(err))
	}
	os.Exit(m.Run())
}

// testIolab is a command running the test binary as iolab.
func testIolab(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), iolabInTestEnv+"=1")
	return cmd
}
