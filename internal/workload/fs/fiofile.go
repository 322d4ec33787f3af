package fs

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
)

// FioFile is a fio job file that fio runs as written (`iolab fs JOBFILE
// --ioengine=fio`): whatever its engines and options, its jobs at the
// same time or one after another as fio runs them. iolab reads of it only
// what it needs — the jobs' names, their runtimes, the target — and hands
// fio the whole text on its standard input, with the options given on the
// command line (FioFileOverrides) at the end of every job: there they
// win, as iolab's flags win over a job file's (on fio's own command line
// they would not). fio's JSON is read back: a run's operations are every
// job's, and each job's own figures are kept as job.N.* (N from 1 in the
// file's order; several clones of a job, numjobs, are one job).
type FioFile struct {
	path    string
	text    []byte   // what fio reads
	jobs    []string // the job sections' names, in order
	runtime time.Duration
	target  string
	params  map[string]string
	fio     string
}

// FioFileOverrides are the flags that reach a job file fio runs, as the
// options of the same names: what shortens a job or points it elsewhere.
// Any other option is the job file's to set.
var FioFileOverrides = []string{"runtime", "ramp_time", "size", "io_size", "filesize", "directory", "filename", "numjobs", "iodepth", "direct", "time_based"}

// NewFioFile reads the job file at path for fio to run, with overrides
// (flag name to value as given) added to every job and engine, when not
// empty, as every job's ioengine (--ioengine=fio:ENGINE). fioPath is fio.
func NewFioFile(path string, overrides map[string]string, engine, fioPath string) (*FioFile, error) {
	text, err := readJobText(path)
	if err != nil {
		return nil, err
	}
	var extra []string
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		value, err := fioOverride(name, overrides[name])
		if err != nil {
			return nil, err
		}
		extra = append(extra, name+"="+value)
	}
	if engine != "" {
		extra = append(extra, "ioengine="+engine)
	}
	// Each job reported on its own: fio's group_reporting would fold a
	// group's jobs into its first; iolab reports the jobs and their sum.
	extra = append(extra, "group_reporting=0")
	sections, err := parseFioSections(path, text, false)
	if err != nil {
		return nil, err
	}
	registerFioSecrets(sections)
	f := &FioFile{path: path, text: appendToJobs(text, extra), fio: fioBinary(fioPath)}
	// The jobs as fio will read them: the file's options, then those.
	var added []fioOpt
	for _, e := range extra {
		k, v, _ := strings.Cut(e, "=")
		added = append(added, fioOpt{k, v, "the command line"})
	}
	var group time.Duration
	for i, s := range sections {
		s.opts = append(s.opts, added...)
		f.jobs = append(f.jobs, s.jobName())
		runtime := s.runtime()
		if i > 0 && s.waits() {
			f.runtime, group = f.runtime+group, 0
		}
		group = max(group, runtime)
		if f.target == "" {
			f.target = s.value("filename")
			if f.target == "" {
				f.target = s.value("directory")
			}
		}
		sections[i] = s
	}
	f.runtime += group
	f.params = fioFileParams(path, sections)
	return f, nil
}

// registerFioSecrets registers the job file's secrets, so that its text
// is stored and shown masked: the values of fio's options that hold one
// (http_s3_key, http_pass, http_swift_auth_token ...) and the passwords
// of URLs (nbd's uri=, libiscsi's filename=).
func registerFioSecrets(sections []JobSection) {
	for _, s := range sections {
		for _, o := range s.opts {
			if redact.IsSecretName(o.key) || o.key == "pass" || strings.HasSuffix(o.key, "_pass") {
				redact.Secret(o.value)
			}
			if strings.Contains(o.value, "://") {
				redact.Secret(redact.URLSecrets(o.value)...)
			}
		}
	}
}

// fioOverride is a flag's value in fio's form: durations in
// milliseconds and sizes in bytes (iolab takes forms fio does not, such
// as 1m30s and 4MiB), the rest as given.
func fioOverride(name, value string) (string, error) {
	switch name {
	case "runtime", "ramp_time":
		d, err := units.ParseDuration(value)
		if err != nil {
			return "", fmt.Errorf("--%s %q: %w", name, value, err)
		}
		return fmt.Sprintf("%dms", d.Milliseconds()), nil
	case "size", "io_size", "filesize":
		n, err := units.ParseSize(value)
		if err != nil {
			return "", fmt.Errorf("--%s %q: %w", name, value, err)
		}
		return fmt.Sprint(n), nil
	}
	if strings.ContainsAny(value, "\n\r") {
		return "", fmt.Errorf("--%s: a value on one line", name)
	}
	return value, nil
}

// appendToJobs adds lines at the end of every job section of a job
// file's text (not of [global]: a later job's own options would win over
// them there).
func appendToJobs(text []byte, lines []string) []byte {
	if len(lines) == 0 {
		return text
	}
	add := "; iolab's command line:\n" + strings.Join(lines, "\n") + "\n"
	var out bytes.Buffer
	inJob := false
	for _, line := range strings.SplitAfter(string(text), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			if inJob {
				out.WriteString(add)
			}
			inJob = t != "[global]"
		}
		out.WriteString(line)
		if !strings.HasSuffix(line, "\n") && line != "" {
			out.WriteString("\n")
		}
	}
	if inJob {
		out.WriteString(add)
	}
	return out.Bytes()
}

// value is the last value the section gives an option ("" if none).
func (j JobSection) value(key string) string {
	for i := len(j.opts) - 1; i >= 0; i-- {
		if FioAlias(j.opts[i].key) == key {
			return j.opts[i].value
		}
	}
	return ""
}

// runtime is how long the job runs at most by its options: runtime and
// ramp_time (0 when it has no runtime: it runs its size once).
func (j JobSection) runtime() time.Duration {
	d, err := units.ParseDuration(j.value("runtime"))
	if err != nil || d <= 0 {
		return 0
	}
	ramp, _ := units.ParseDuration(j.value("ramp_time"))
	start, _ := units.ParseDuration(j.value("startdelay"))
	return d + max(ramp, 0) + max(start, 0)
}

// waits says the job starts after the ones before it have ended.
func (j JobSection) waits() bool {
	for _, k := range []string{"stonewall", "wait_for_previous", "wait_for"} {
		if v := j.value(k); v != "" && v != "0" {
			return true
		}
	}
	return false
}

// fioFileParams are a job file's parameters as stored: the file and its
// jobs, the engine, and every option all its jobs give the same value.
func fioFileParams(path string, sections []JobSection) map[string]string {
	names := make([]string, len(sections))
	for i, s := range sections {
		names[i] = s.jobName()
	}
	p := map[string]string{"jobfile": filepath.Base(path), "jobs": strings.Join(names, ",")}
	common := map[string]string{}
	for i, s := range sections {
		mine := map[string]string{}
		for _, o := range s.opts {
			mine[FioAlias(o.key)] = o.value
		}
		if i == 0 {
			common = mine
			continue
		}
		for k, v := range common {
			if mine[k] != v {
				delete(common, k)
			}
		}
	}
	for k, v := range common {
		if k != "name" && k != "description" && k != "group_reporting" {
			p[k] = redact.String(v)
		}
	}
	p["ioengine"] = EngineFio
	if e := common["ioengine"]; e != "" {
		p["ioengine"] = EngineFio + ":" + e
	}
	if len(sections) == 1 {
		p["jobname"] = sections[0].Name
	}
	return p
}

// Kind implements workload.Workload.
func (f *FioFile) Kind() string { return "fs" }

// Params implements workload.Workload.
func (f *FioFile) Params() map[string]string { return maps.Clone(f.params) }

// Jobs are the job sections' names, in the file's order.
func (f *FioFile) Jobs() []string { return f.jobs }

// Runtime is how long a run goes by the file's runtimes (0: not known).
func (f *FioFile) Runtime() time.Duration { return f.runtime }

// Target is the first job's filename or directory ("" if none).
func (f *FioFile) Target() string { return f.target }

// Text is the job file as fio reads it.
func (f *FioFile) Text() []byte { return f.text }

// Prepare implements workload.Workload: fio is there and takes the file
// (its own --parse-only: an option it does not know is its message).
func (f *FioFile) Prepare(ctx context.Context) error {
	if err := checkFio(f.fio); err != nil {
		return err
	}
	out, _, err := runFioProcess(ctx, f.fio, []string{"--parse-only", "-"}, f.text, time.Minute)
	if err != nil && ctx.Err() == nil {
		return &workload.InputError{Err: fmt.Errorf("%s: fio refuses it: %s", f.path, redact.String(lastLine(out.stderr)))}
	}
	return ctx.Err()
}

// Run implements workload.Workload: fio runs the file once.
func (f *FioFile) Run(ctx context.Context, _ func(ops, bytes int64)) (*metrics.Result, error) {
	res, version, err := fioResult(ctx, f.fio, []string{"--output-format=json+", "-"}, f.text, fioLimit(f.runtime), f.jobs)
	if res == nil {
		return nil, err
	}
	names := make([]string, len(f.jobs))
	for i, j := range f.jobs {
		names[i] = fmt.Sprintf("%d [%s]", i+1, j)
	}
	res.Notes = append(res.Notes, metrics.Note{Code: "fio-engine", Message: "ran by fio " + version + " on the job file " +
		filepath.Base(f.path) + " as written; latency is fio's completion latency (clat); no per-second series; jobs " + strings.Join(names, ", ")})
	return res, err
}

// Close implements workload.Workload.
func (f *FioFile) Close() error { return nil }
