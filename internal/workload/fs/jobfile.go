package fs

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/flagval"
)

// FioAlias is the iolab fs flag a fio option's other name (blocksize,
// readwrite, io_limit, iodepth_batch) stands for, as fio takes it on its
// command line and in a job file; the name itself otherwise.
func FioAlias(name string) string {
	if a, ok := fioAliases[name]; ok {
		return a
	}
	return name
}

// A fio job file's options as `iolab fs` flags. Options with the same name
// and meaning map to themselves; fio's aliases and the options iolab takes
// in another form are translated; a few are accepted because iolab always
// behaves that way. Anything else is an error naming the file and line, so
// a job never runs with an option silently dropped.
var (
	fioSameOptions = []string{"name", "filename", "directory", "rw", "rwmixread", "bs", "size", "io_size", "number_ios", "runtime", "ramp_time", "iodepth",
		"iodepth_batch_submit", "numjobs", "direct", "invalidate", "fsync", "fdatasync", "ioengine",
		"buffer_compress_percentage", "dedupe_percentage", "zero_buffers", "nrfiles", "filesize", "offset", "offset_increment", "bssplit", "bsrange", "blockalign", "write_lat_log", "startdelay", "filename_format", "buffer_pattern", "openfiles", "rate", "rate_iops", "rate_process",
		"thinktime", "thinktime_blocks", "sync_file_range", "verify", "verify_backlog", "verify_only", "do_verify", "thread", "steadystate", "steadystate_duration", "steadystate_ramp_time", "norandommap", "random_distribution", "loops", "randseed", "randrepeat"}
	fioAliases = map[string]string{"readwrite": "rw", "timeout": "runtime", "blocksize_range": "bsrange", "ba": "blockalign", "blocksize": "bs", "io_limit": "io_size", "iodepth_batch": "iodepth_batch_submit", "threads": "thread",
		"ss": "steadystate", "ss_dur": "steadystate_duration", "ss_ramp": "steadystate_ramp_time"}
	// Accepted here without effect: iolab reports the jobs of a group
	// together and each (group_reporting, new_group); time_based is read
	// by Apply, stonewall and wait_for_previous by ReadJobFile's groups.
	fioIgnored = map[string]bool{"description": true, "group_reporting": true, "time_based": true,
		"stonewall": true, "wait_for_previous": true, "new_group": true, "wait_for": true}
)

// fioNoEffect are the options that change nothing in what iolab does,
// accepted and said once, with why.
var fioNoEffect = map[string]string{
	"gtod_reduce":      "it times every operation",
	"random_generator": "its random order is its own: a keyed permutation of the blocks, or with norandommap a PCG draw",
	"io_submit_mode":   "its engines submit inline",
	"clocksource":      "its clock is CLOCK_MONOTONIC",
	"log_avg_msec":     "its latency log in fio's format has a line for every measured operation",
}

// JobSection is one job section of a job file: the options of the [global]
// sections before it, then its own.
type JobSection struct {
	Name string
	at   string // file:line of its section
	opts []fioOpt
}

type fioOpt struct{ key, value, at string }

// maxJobFileBytes bounds what is read of a job file (a path such as
// /dev/zero never ends).
const maxJobFileBytes = 1 << 20

// ReadJobFile parses a fio job file, read once: its text is returned too,
// for the record of what ran. Its jobs come in groups, as fio runs them:
// the jobs of a group at the same time, the groups one after another (a
// job with stonewall or wait_for_previous starts a group).
func ReadJobFile(path string) ([][]JobSection, []byte, error) {
	text, err := readJobText(path)
	if err != nil {
		return nil, nil, err
	}
	jobs, err := parseFioSections(path, text, true)
	if err != nil {
		return nil, nil, err
	}
	var groups [][]JobSection
	for i, j := range jobs {
		if i > 0 {
			if err := j.waitsFor(groups[len(groups)-1]); err != nil {
				return nil, nil, err
			}
		}
		if i == 0 || j.waits() {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], j)
	}
	return groups, text, nil
}

// waitsFor checks a job's wait_for against the group before it (last):
// iolab starts a job after a whole group, which is fio's wait_for when
// it names the group's one job (waitfor.fio's chain); fio starts a job
// waiting for one job of several at that job's end, beside the rest, which
// iolab's groups cannot.
func (j JobSection) waitsFor(last []JobSection) error {
	name := j.value("wait_for")
	if name == "" {
		return nil
	}
	var names []string
	for _, l := range last {
		names = append(names, l.jobName())
	}
	switch {
	case len(names) == 1 && names[0] == name:
		return nil
	case slices.Contains(names, name):
		return fmt.Errorf("%s: wait_for=%s: fio would start [%s] when [%s] ends, beside the rest of its group (%s); iolab starts a job after a whole group: run the file with --ioengine=fio", j.at, name, j.Name, name, strings.Join(names, ", "))
	}
	return fmt.Errorf("%s: wait_for=%s: not the job before it (%s); iolab's jobs wait for the group just before them: run the file with --ioengine=fio", j.at, name, strings.Join(names, ", "))
}

// jobName is the job's name as fio reports it: its name=, else its section's.
func (j JobSection) jobName() string { return cmp.Or(j.value("name"), j.Name) }

// readJobText reads a job file, bounded.
func readJobText(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		// Most often a flag's value after a space: --direct 1.
		return nil, fmt.Errorf("%q is not a job file (no such file); flags take values as --flag=value (e.g. --direct=1)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("job file: %w", err)
	}
	defer f.Close()
	text, err := io.ReadAll(io.LimitReader(f, maxJobFileBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("job file %s: %w", path, err)
	case len(text) > maxJobFileBytes:
		return nil, fmt.Errorf("job file %s: more than 1 MiB; a fio job file is far smaller", path)
	}
	return text, nil
}

// parseFioSections reads the jobs of a job file's text; forOwn: for
// iolab's own engines (fio reads what it includes, iolab does not).
func parseFioSections(path string, text []byte, forOwn bool) ([]JobSection, error) {
	var global []fioOpt
	var jobs []JobSection
	const none, inGlobal = -2, -1
	cur := none // the section being read: a job's index, or one of those
	sc := bufio.NewScanner(bytes.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		at := fmt.Sprintf("%s:%d", path, n)
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == ';' || line[0] == '#':
			continue
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("%s: %q: a section header is [name]", at, line)
			}
			if name := strings.TrimSpace(line[1 : len(line)-1]); name == "global" {
				cur = inGlobal
			} else {
				// fio names a job by its section: a [global] name= names
				// none (the job's own name= does).
				opts := slices.DeleteFunc(slices.Clone(global), func(o fioOpt) bool { return o.key == "name" })
				jobs = append(jobs, JobSection{Name: name, at: at, opts: opts})
				cur = len(jobs) - 1
			}
			continue
		case cur == none:
			if !forOwn && strings.HasPrefix(line, "include ") {
				continue // fio's include of another file, which fio reads
			}
			return nil, fmt.Errorf("%s: %q comes before any [section]", at, line)
		}
		if i := strings.IndexAny(line, ";#"); i > 0 && (line[i-1] == ' ' || line[i-1] == '\t') {
			line = strings.TrimSpace(line[:i]) // a comment after the option (tiobench-example.fio's numjobs=4 ; ...)
		}
		key, value, hasValue := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !hasValue {
			value = "1" // a bare option is a switch that is on
		}
		if cur == inGlobal {
			global = append(global, fioOpt{key, value, at})
		} else {
			jobs[cur].opts = append(jobs[cur].opts, fioOpt{key, value, at})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("job file %s: %w", path, err)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%s: no job section: fio job files have [global] and a [job]", path)
	}
	return jobs, nil
}

// apply sets the fs flags from the job's options and names the job after
// its section; flags in cmdline (given on the command line) are left as they
// are, and where the job file sets one to another value that is said: fio
// keeps the job file's. fresh is a set of the flags at their defaults, to
// read the job's values with. It returns notes on what runs differently
// from fio.
func (j JobSection) Apply(flags, fresh *pflag.FlagSet, cmdline map[string]bool) ([]string, error) {
	var notes []string
	if !cmdline["name"] {
		_ = flags.Set("name", j.Name) // fio names a job by its section; name= may follow
	}
	timeBased, timeBasedAt, runtimeAt := false, "", ""
	for _, o := range j.opts {
		value, err := expandFioEnv(o.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", o.at, o.key, err)
		}
		var note string
		raw := value
		name, err := fioFlag(o.key, &value, &note)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.at, err)
		}
		if o.key == "time_based" && !cmdline["time_based"] {
			timeBased, timeBasedAt = value != "0", o.at
		}
		if name == "ioengine" && cmdline[name] && flags.Lookup(name).Value.String() == EngineFio {
			// --ioengine=fio runs fio with the job's own engine.
			if err := flagval.Set(flags, name, EngineFio+":"+raw); err != nil {
				return nil, fmt.Errorf("%s: %s=%s: %w", o.at, o.key, raw, err)
			}
			continue
		}
		if name != "" && cmdline[name] {
			given := flags.Lookup(name).Value.String()
			if flagval.Set(fresh, name, value) == nil && fresh.Lookup(name).Value.String() != given {
				notes = append(notes, fmt.Sprintf("%s: %s=%s in the job file; --%s=%s on the command line wins here (fio would keep the job file's)",
					o.at, o.key, o.value, name, given))
			}
			continue
		}
		if name == "" {
			if note != "" && !slices.Contains(notes, note) {
				notes = append(notes, note)
			}
			continue
		}
		if err := flagval.Set(flags, name, value); err != nil {
			return nil, fmt.Errorf("%s: %s=%s: %w", o.at, o.key, value, err)
		}
		if note != "" && !slices.Contains(notes, note) {
			notes = append(notes, note)
		}
		if name == "runtime" {
			runtimeAt = o.at
		}
	}
	if cmdline["time_based"] { // the command line's, over the file's
		timeBased, timeBasedAt = flags.Lookup("time_based").Value.String() == "1", "--time_based"
	}
	if timeBased && runtimeAt == "" && !cmdline["runtime"] {
		return nil, fmt.Errorf("%s: time_based without runtime: fio says \"time_based requires a runtime/timeout setting\" and writes the size once; give runtime= (or --runtime)", timeBasedAt)
	}
	if (runtimeAt != "" || cmdline["runtime"]) && !timeBased {
		// fio's: the job ends at the end of its size or at runtime,
		// whichever comes first.
		if err := flagval.Set(flags, "runtime_caps", "1"); err != nil {
			return nil, err
		}
	}
	return notes, nil
}

// fioFlag returns the iolab flag for a fio option ("" when it has no
// effect), translating value in place where the forms differ and saying in
// note when iolab runs it differently.
func fioFlag(key string, value *string, note *string) (string, error) {
	if alias, ok := fioAliases[key]; ok {
		key = alias
	}
	switch why, noEffect := fioNoEffect[key]; {
	case fioIgnored[key]:
		return "", nil
	case noEffect:
		*note = fmt.Sprintf("%s=%s: no effect in iolab (%s)", key, *value, why)
		return "", nil
	case key == "rw" && *value == "readwrite":
		*value = "rw"
	case key == "buffered": // fio's other side of direct
		b, err := strconv.ParseBool(*value)
		if err != nil {
			return "", fmt.Errorf("buffered=%s: want 1 or 0", *value)
		}
		*value = map[bool]string{true: "0", false: "1"}[b]
		return "direct", nil
	case key == "rwmixwrite":
		w, err := strconv.Atoi(*value)
		if err != nil || w < 0 || w > 100 {
			return "", fmt.Errorf("rwmixwrite=%s: want a whole number from 0 to 100", *value)
		}
		*value = strconv.Itoa(100 - w)
		return "rwmixread", nil
	case key == "ioengine":
		engine, ok := FioEngines[*value]
		if !ok {
			return "", fmt.Errorf("ioengine=%s: iolab runs %s", *value, strings.Join(slices.Sorted(maps.Keys(FioEngines)), ", "))
		}
		if engine != *value {
			*note = fmt.Sprintf("ioengine=%s runs as iolab's %s", *value, engine)
		}
		*value = engine
	}
	if slices.Contains(fioSameOptions, key) {
		return key, nil
	}
	known := slices.Concat(fioSameOptions, []string{"rwmixwrite", "buffered"}, slices.Collect(maps.Keys(fioAliases)),
		slices.Collect(maps.Keys(fioIgnored)), slices.Collect(maps.Keys(fioNoEffect)))
	slices.Sort(known)
	return "", fmt.Errorf("%s: not an option iolab's engines take; fio runs the file as written with --ioengine=fio. iolab's engines take %s", key, strings.Join(known, ", "))
}

// expandFioEnv replaces ${NAME} with the environment variable, as fio
// does; an unset one is an error rather than an empty value. $NAME without
// braces stays as written (filename_format's $jobnum is fio's own).
func expandFioEnv(s string) (string, error) {
	var missing string
	out := fioEnvVar.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		v, ok := os.LookupEnv(name)
		if !ok && missing == "" {
			missing = name
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("environment variable %s is not set", missing)
	}
	return out, nil
}

var fioEnvVar = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)
