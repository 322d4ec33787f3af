// Command fio_examples runs fio's own example job files through fio and
// through `iolab fs FILE --ioengine=fio`, file by file, and prints what
// each did: whether it completed, and the operations each counted. The
// examples are shortened and pointed into a scratch filesystem on the
// command line (-runtime, -size; directory= into it, filename=fio.file in it), as
// iolab hands them to fio: fio itself reads the same text iolab gives it.
//
//	go run ./bench/fio_examples [-examples /usr/share/doc/fio/examples] [-runtime 5s] [-size 8m] [-sized=false] [-only zipf,null]
//
// As root the scratch filesystem is a tmpfs of -tmpfs bytes (some
// examples fill their device on purpose, and one made a 100 GB file
// before paths were rewritten), and each case runs in a PID namespace of
// its own, killed whole at its end (fio forks its jobs; an example's
// submitter outlived its process group). Not as root: a directory, each
// file bounded by -size. The examples come with Debian's fio-examples
// (apt-get install fio-examples).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/workload/fs"
)

func main() { harness.Main(bench) }

func bench() {
	examples := flag.String("examples", "/usr/share/doc/fio/examples", "fio's example job files")
	runtime := flag.String("runtime", "5s", "each job's runtime, at the end of every job (with -sized a bound)")
	size := flag.String("size", "8m", "each job's size and filesize")
	tmpfs := flag.String("tmpfs", "512m", "the scratch tmpfs's size (as root)")
	only := flag.String("only", "", "these examples only (names without .fio, comma-separated)")
	sized := flag.Bool("sized", true, "every job does its size (time_based=0; the runtime a bound), so that the tools' counts compare")
	flag.Parse()
	files, _ := filepath.Glob(filepath.Join(*examples, "*.fio"))
	if len(files) == 0 {
		fmt.Printf("no job files in %s: install fio's examples (apt-get install fio-examples) or give -examples\n", *examples)
		return
	}
	if _, err := exec.LookPath("fio"); err != nil {
		fmt.Println("fio is not installed (apt-get install fio)")
		return
	}
	work := harness.WorkDir("", "fio-examples-")
	bin := harness.BuildIolab(work)
	scratch := filepath.Join(work, "scratch")
	if err := os.Mkdir(scratch, 0o755); err != nil {
		harness.Fatal(err)
	}
	isolated := os.Geteuid() == 0
	if isolated {
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+*tmpfs, "tmpfs", scratch).CombinedOutput(); err != nil {
			harness.Fatalf("mount a tmpfs on %s: %v: %s", scratch, err, out)
		}
		harness.AtExit(func() { _ = exec.Command("umount", "-l", scratch).Run() })
	}
	target := filepath.Join(scratch, "t")
	overrides := map[string]string{"runtime": *runtime, "size": *size, "filesize": *size, "directory": target, "filename": "fio.file"}
	var extra []string // the same to iolab
	if *sized {
		overrides["time_based"] = "0"
		extra = append(extra, "--time_based=0")
	}
	fmt.Printf("fio's examples from %s, each job: runtime=%s size=filesize=%s, paths into %s (%s)\n", *examples, *runtime, *size, target,
		map[bool]string{true: "a tmpfs of " + *tmpfs + ", each case in a PID namespace", false: "not root: a directory"}[isolated])
	fmt.Printf("%-28s %-40s %-40s %10s %10s %-40s %10s\n", "example", "fio", "iolab --ioengine=fio", "fio ops", "iolab ops", "iolab's own engine", "own ops")
	var ran, fioDone, bothDone, same, local, ownDone, ownSame int
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".fio")
		if *only != "" && !slices.Contains(strings.Split(*only, ","), name) {
			continue
		}
		ran++
		job, err := fs.NewFioFile(f, overrides, "", "fio")
		if err != nil {
			fmt.Printf("%-28s iolab cannot read it: %v\n", name, err)
			continue
		}
		fresh(target)
		fioOut, fioErr := inCase(isolated, target, job.Text(), "fio", "--output-format=json", "-")
		fioOps, fioBytes := fioOperations(fioOut)
		fresh(target)
		out, iolabErr := inCase(isolated, target, nil, bin, append([]string{"fs", f, "--ioengine=fio", "--directory=" + target, "--filename=" + overrides["filename"],
			"--size=" + *size, "--filesize=" + *size, "--runtime=" + *runtime, "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(work, "x.db")}, extra...)...)
		iolabOps, iolabBytes := iolabOperations(out)
		near := func(a, b int64) bool { return b > 0 && math.Abs(float64(a-b)) <= 0.01*float64(b) }
		within := func(n, moved int64) bool { return near(n, fioOps) && near(moved, fioBytes) }
		own, ownOps, ownBytes := "-", int64(0), int64(0)
		if fioErr == nil {
			fioDone++
			if iolabErr == nil {
				bothDone++
				if within(iolabOps, iolabBytes) {
					same++
				}
			}
			if localEngines(job.Text()) {
				// The same file on iolab's own engines.
				local++
				fresh(target)
				out, err := inCase(isolated, target, nil, bin, append([]string{"fs", f, "--directory=" + target, "--filename=" + overrides["filename"],
					"--size=" + *size, "--filesize=" + *size, "--runtime=" + *runtime, "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(work, "own.db")}, extra...)...)
				own = outcome(err)
				ownOps, ownBytes = iolabOperations(out)
				if err == nil {
					ownDone++
					if within(ownOps, ownBytes) {
						ownSame++
					}
				}
			}
		}
		fmt.Printf("%-28s %-40s %-40s %10d %10d %-40s %10d\n", name, outcome(fioErr), outcome(iolabErr), fioOps, iolabOps, own, ownOps)
	}
	fmt.Printf("\n%d examples: fio completed %d; iolab --ioengine=fio completed %d of those; %d counted the same operations and bytes within 1%% "+
		"(a job that reaches its runtime counts what fit in it, which varies)\n", ran, fioDone, bothDone, same)
	fmt.Printf("of the %d fio completed on local-file engines only, iolab's own engines ran %d, %d with fio's operations and bytes within 1%%\n", local, ownDone, ownSame)
}

// fresh empties the scratch target.
func fresh(target string) {
	_ = os.RemoveAll(target)
	if err := os.MkdirAll(target, 0o755); err != nil {
		harness.Fatal(err)
	}
}

// inCase runs a command in dir with stdin, in a PID namespace of its own
// when isolated (all it forked dies with it), for at most two minutes.
func inCase(isolated bool, dir string, stdin []byte, name string, args ...string) ([]byte, error) {
	if isolated {
		args = append([]string{"--pid", "--fork", "--kill-child", name}, args...)
		name = "unshare"
	}
	cmd := exec.Command("timeout", append([]string{"-s", "KILL", "120", name}, args...)...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	out, err := harness.Output(cmd)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out, fmt.Errorf("exit %d after %v: %s", ee.ExitCode(), time.Since(start).Round(time.Second), lastLine(ee.Stderr))
		}
	}
	return out, err
}

func lastLine(b []byte) string {
	lines := strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}

func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	s := err.Error()
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// fioOperations are the reads and writes of fio's JSON, every job's, and
// their bytes.
func fioOperations(out []byte) (ops, moved int64) {
	if i := bytes.IndexByte(out, '{'); i > 0 {
		out = out[i:]
	}
	var doc struct {
		Jobs []struct {
			Read, Write struct {
				TotalIOs int64 `json:"total_ios"`
				IOBytes  int64 `json:"io_bytes"`
			}
		}
	}
	_ = json.Unmarshal(out, &doc)
	for _, j := range doc.Jobs {
		ops += j.Read.TotalIOs + j.Write.TotalIOs
		moved += j.Read.IOBytes + j.Write.IOBytes
	}
	return ops, moved
}

// iolabOperations are the reads and writes of iolab's measured runs (one
// a cell), and their bytes.
func iolabOperations(out []byte) (ops, moved int64) {
	var doc struct {
		Runs []struct {
			Read, Write struct{ Ops, Bytes int64 }
		}
	}
	_ = json.Unmarshal(out, &doc)
	for _, r := range doc.Runs {
		ops += r.Read.Ops + r.Write.Ops
		moved += r.Read.Bytes + r.Write.Bytes
	}
	return ops, moved
}

// localEngines says every ioengine= of a job file is one of fio's engines
// on local files (or none is given).
func localEngines(text []byte) bool {
	local := []string{"sync", "psync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap", "null"}
	for _, line := range strings.Split(string(text), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && strings.TrimSpace(k) == "ioengine" && !slices.Contains(local, strings.TrimSpace(v)) {
			return false
		}
	}
	return true
}
