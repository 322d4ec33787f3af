package harness

import (
	"flag"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/iolab/iolab/internal/procgroup"
)

// Every bench can be run contended: -stress N starts `stress-ng --cpu N`
// beside both tools for the whole bench (and ends it with the bench), as
// a CI runner or a server's own host is loaded — a speed claim is made
// quiet and contended. The flag is declared here, once, for every bench;
// Main starts the load before the bench's body, so it reads the flag from
// the command line itself (the body parses the rest).
var (
	stress    = flag.Int("stress", 0, "run `N` CPU hogs (stress-ng --cpu N) beside both tools for the whole bench: the contended measurement (0: quiet)")
	stressing int // how many hogs run
)

// startStress starts the -stress load the command line asks for, and
// says so; it returns how many hogs run.
func startStress(args []string) int {
	n := stressArg(args)
	if n < 0 {
		Fatalf("-stress %d: want a count of CPU hogs, 0 for none", n)
	}
	if n == 0 {
		return 0
	}
	path, err := exec.LookPath("stress-ng")
	if err != nil {
		Fatalf("-stress %d: stress-ng is not installed (apt-get install stress-ng)", n)
	}
	cmd := exec.Command(path, "--cpu", strconv.Itoa(n), "--quiet")
	// A group of its own, killed whole: stress-ng's hogs are its children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := procgroup.Start(cmd); err != nil {
		Fatalf("-stress %d: %v", n, err)
	}
	AtExit(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	fmt.Printf("contended: stress-ng --cpu %d runs beside both tools for the whole bench\n\n", n)
	return n
}

// stressArg is -stress's value on the command line (-stress N,
// -stress=N, with one dash or two; 0 when absent or not a number, which
// the body's flag.Parse then refuses).
func stressArg(args []string) int {
	for i, a := range args {
		name, value, eq := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if a == name || name != "stress" || !strings.HasPrefix(a, "-") {
			continue
		}
		if !eq {
			if i+1 >= len(args) {
				return 0
			}
			value = args[i+1]
		}
		n, err := strconv.Atoi(value)
		if err != nil {
			return 0
		}
		return n
	}
	return 0
}
