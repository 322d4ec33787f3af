// Package slurmtest gives a test a real Slurm cluster of one node: Debian's
// munged, slurmctld and slurmd, started in a temporary directory on free
// loopback ports with a munge key of their own, ended with the test. The
// node offers 8 CPUs whatever the machine has (SlurmdParameters
// config_overrides), so a load's segments fit on a 2-CPU machine.
package slurmtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/procgroup"
)

// Cluster is a running cluster: Env is what a command needs to use it
// (SLURM_CONF).
type Cluster struct {
	Env []string
}

// Start starts a cluster for t, ended when t ends. Without Slurm installed
// the test is skipped, except in CI (.ci/run installs it), where that
// fails.
func Start(t *testing.T) *Cluster {
	t.Helper()
	for _, tool := range []string{"munged", "slurmctld", "slurmd", "sbatch", "sinfo"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed; .ci/run installs it (apt-get install slurm-wlm munge)", tool)
			}
			t.Skipf("%s not installed (apt-get install slurm-wlm munge)", tool)
		}
	}
	dir, err := os.MkdirTemp("", "slurmtest-") // short: munge's socket path is bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{"state", "spool", "log", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	if f, err := os.Open("/dev/urandom"); err == nil {
		_, _ = f.Read(key)
		f.Close()
	}
	if err := os.WriteFile(filepath.Join(dir, "munge.key"), key, 0o400); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "run", "munge.sock")
	start(t, dir, "munged", "munged", "-F", "--key-file="+filepath.Join(dir, "munge.key"), "--socket="+sock,
		"--pid-file="+filepath.Join(dir, "run", "munged.pid"), "--log-file="+filepath.Join(dir, "log", "munged.log"), "--seed-file="+filepath.Join(dir, "run", "seed"), "--force")
	waitFor(t, dir, "munged", func() bool { _, err := os.Stat(sock); return err == nil })
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "slurm.conf")
	text := fmt.Sprintf(`ClusterName=iolabtest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
SrunPortRange=%[4]d-%[5]d
AuthType=auth/munge
AuthInfo=socket=%[6]s
CredType=cred/munge
StateSaveLocation=%[7]s/state
SlurmdSpoolDir=%[7]s/spool
SlurmctldPidFile=%[7]s/run/slurmctld.pid
SlurmdPidFile=%[7]s/run/slurmd.pid
SlurmctldLogFile=%[7]s/log/slurmctld.log
SlurmdLogFile=%[7]s/log/slurmd.log
SlurmUser=%[8]s
SlurmdUser=%[8]s
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=test Nodes=%[1]s Default=YES MaxTime=INFINITE State=UP
`, host, freePort(t), freePort(t), 40000+os.Getpid()%10000, 40000+os.Getpid()%10000+50, sock, dir, me.Username)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Env: append(os.Environ(), "SLURM_CONF="+conf)}
	start(t, dir, "slurmctld", "slurmctld", "-D", "-f", conf)
	start(t, dir, "slurmd", "slurmd", "-D", "-f", conf)
	waitFor(t, dir, "the node", func() bool {
		cmd := exec.Command("sinfo", "-h", "-o", "%t")
		cmd.Env = c.Env
		out, err := cmd.Output()
		return err == nil && strings.TrimSpace(string(out)) == "idle"
	})
	return c
}

// start runs a daemon in the foreground, its output in dir/log/NAME.out,
// killed with its group when the test ends.
func start(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	out, err := os.Create(filepath.Join(dir, "log", name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// From the thread that lives with the test binary: Pdeathsig follows
	// the forking thread, and Go retires threads (procgroup.Start).
	if err := procgroup.Start(cmd); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		out.Close()
	})
}

// waitFor waits up to a minute for ready, failing with the daemons' logs.
func waitFor(t *testing.T, dir, what string, ready func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for !ready() {
		select {
		case <-ctx.Done():
			var logs strings.Builder
			files, _ := filepath.Glob(filepath.Join(dir, "log", "*"))
			for _, f := range files {
				b, _ := os.ReadFile(f)
				fmt.Fprintf(&logs, "== %s\n%s\n", filepath.Base(f), b)
			}
			t.Fatalf("Slurm: %s not ready after a minute\n%s", what, logs.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
