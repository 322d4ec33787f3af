package cli

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/workload"
	"github.com/iolab/iolab/internal/workload/fs"
)

// FuzzFioJobFile: a job file never panics the parser or the workload it
// builds, and its errors name file:line.
func FuzzFioJobFile(f *testing.F) {
	for _, seed := range []string{
		"[global]\nbs=4k\ndirect=1\n[job]\nrw=randread\nsize=1m\n",
		"[a]\nrw=readwrite\nrwmixwrite=30\nioengine=libaio\n[b]\nstonewall\nruntime=${HOME}\n",
		"bs=4k\n", "[x\n", "[j]\nnumjobs=-1\niodepth=99999999999999999999\n", "[j]\nruntime=NaN\n",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	at := regexp.MustCompile(`job\.fio:\d+: |job\.fio: no job section|"[^"]*" is not a job file`)
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(dir, "job.fio")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		groups, _, err := fioJobs(path, pflag.NewFlagSet("fs", pflag.ContinueOnError), io.Discard)
		if err != nil {
			if !at.MatchString(err.Error()) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: %q names no place", text, err)
			}
			return
		}
		for _, jobs := range groups {
			for _, j := range jobs {
				if job, err := j.Options(); err == nil {
					_, _ = fs.New(job)
				}
			}
		}
	})
}

// FuzzWorkloadFlags: any arguments to any workload's flags are parsed and
// checked without a panic; a refused value is one line naming its flag
// (issue 45 item 9: no refusal without its place).
func FuzzWorkloadFlags(f *testing.F) {
	for _, seed := range []string{
		"--rw=randrw\x00--bs=4k\x00--iodepth=32\x00--numjobs=4\x00--runtime=1e-30",
		"--mix=get=100\x00--objects=-5\x00--size=1k-10m\x00--rate=NaN",
		"--size=0,1k\x00--concurrency=0\x00-H\x00Authorization: x\x00--basic=u",
		"--profile=8K-24bit\x00--fps=inf\x00--threads=0\x00--frames=1",
		"--size=A-", "-H0", // once two lines; a short flag named
	} {
		f.Add(seed)
	}
	named := regexp.MustCompile(`(^|[\s(])--?[a-zA-Z]|^[a-z0-9]+\.[a-z_-]+[: ]`)
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		try := func(add func(*pflag.FlagSet), build func() error) {
			flags := pflag.NewFlagSet("w", pflag.ContinueOnError)
			flags.SetOutput(io.Discard)
			add(flags)
			if err := flags.Parse(args); err != nil {
				if msg := flagError(nil, err).Error(); strings.Contains(msg, "\n") {
					t.Fatalf("%q: a message on several lines: %q", args, msg)
				}
				return
			}
			// A refusal names its flag (--size), or its key as a plan
			// writes it (cmd.run).
			if err := build(); err != nil && (!named.MatchString(err.Error()) || strings.Contains(err.Error(), "\n")) {
				t.Fatalf("%q: a refusal that names no flag, or on several lines: %q", args, err)
			}
		}
		// Every registered kind, as the command line and a plan set it.
		for _, kind := range workload.Kinds() {
			opts := kind.NewOptions()
			try(opts.AddFlags, func() error {
				_, _, err := opts.Build(workload.Build{})
				return err
			})
		}
	})
}
