package cli

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// A fio job file's options as `iolab fs` flags. Options with the same name
// and meaning map to themselves; fio's aliases and the options iolab takes
// in another form are translated; a few are accepted because iolab always
// behaves that way. Anything else is an error naming the file and line, so
// a job never runs with an option silently dropped.
var (
	fioSameOptions = []string{"name", "filename", "directory", "rw", "rwmixread", "bs", "size", "io_size", "runtime", "iodepth",
		"iodepth_batch_submit", "numjobs", "direct", "invalidate", "fsync", "fdatasync", "ioengine",
		"buffer_compress_percentage", "dedupe_percentage", "zero_buffers"}
	fioAliases = map[string]string{"readwrite": "rw", "blocksize": "bs", "io_limit": "io_size", "iodepth_batch": "iodepth_batch_submit"}
	// Accepted without effect: iolab reports jobs as a group, runs jobs as
	// threads, and is time-based whenever runtime is set.
	fioIgnored = map[string]bool{"description": true, "group_reporting": true, "thread": true, "time_based": true}
	// fio's engines by the engine iolab runs in their place.
	fioEngines = map[string]string{"io_uring": "io_uring", "libaio": "io_uring", "psync": "psync", "sync": "psync",
		"pvsync": "psync", "pvsync2": "psync"}
)

// loadFioJob sets the fs flags from a fio job file: its [global] section,
// then its one job section, which overrides it and names the job. Flags given on the command
// line win over both. It returns notes on what runs differently from fio.
func loadFioJob(path string, flags *pflag.FlagSet) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		// Most often a flag's value after a space: --direct 1.
		return nil, fmt.Errorf("%q is not a job file (no such file); flags take values as --flag=value (e.g. --direct=1)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("job file: %w", err)
	}
	defer f.Close()
	var notes []string
	cmdline := map[string]bool{} // flags given on the command line
	flags.Visit(func(f *pflag.Flag) { cmdline[f.Name] = true })
	section, job := "", ""
	timeBased, runtimeAt := false, ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		at := fmt.Sprintf("%s:%d", path, n)
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("%s: %q: a section header is [name]", at, line)
			}
			section = strings.TrimSpace(line[1 : len(line)-1])
			if section != "global" {
				if job != "" {
					return nil, fmt.Errorf("%s: a second job [%s] after [%s]: iolab fs runs one job (with numjobs copies); "+
						"put each job in its own file, or the jobs in an experiment plan", at, section, job)
				}
				job = section
				if !cmdline["name"] {
					_ = flags.Set("name", job) // fio names a job by its section; name= may follow
				}
			}
			continue
		}
		if section == "" {
			return nil, fmt.Errorf("%s: %q comes before any [section]", at, line)
		}
		key, value, hasValue := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !hasValue {
			value = "1" // a bare option is a switch that is on
		}
		if value, err = expandFioEnv(value); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", at, key, err)
		}
		var note string
		name, err := fioFlag(key, &value, &note)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		if key == "time_based" {
			timeBased = value != "0"
		}
		// A [global] after the job applies only to jobs after it: none.
		if name == "" || cmdline[name] || section == "global" && job != "" {
			continue
		}
		if err := flags.Set(name, value); err != nil {
			return nil, fmt.Errorf("%s: %s=%s: %w", at, key, value, err)
		}
		if note != "" {
			notes = append(notes, note)
		}
		if name == "runtime" {
			runtimeAt = at
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("job file %s: %w", path, err)
	}
	if job == "" {
		return nil, fmt.Errorf("%s: no job section: fio job files have [global] and a [job]", path)
	}
	if runtimeAt != "" && !timeBased {
		notes = append(notes, fmt.Sprintf("%s: runtime without time_based: fio would stop at the end of size or at runtime, "+
			"whichever comes first; iolab runs for runtime", runtimeAt))
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
	switch {
	case fioIgnored[key]:
		return "", nil
	case key == "rw" && *value == "readwrite":
		*value = "rw"
	case key == "rwmixwrite":
		w, err := strconv.Atoi(*value)
		if err != nil || w < 0 || w > 100 {
			return "", fmt.Errorf("rwmixwrite=%s: want a percentage 0..100", *value)
		}
		*value = strconv.Itoa(100 - w)
		return "rwmixread", nil
	case key == "ioengine":
		engine, ok := fioEngines[*value]
		if !ok {
			return "", fmt.Errorf("ioengine=%s: iolab runs %s", *value, strings.Join(slices.Sorted(maps.Keys(fioEngines)), ", "))
		}
		if engine != *value {
			*note = fmt.Sprintf("ioengine=%s runs as iolab's %s", *value, engine)
		}
		*value = engine
	}
	if slices.Contains(fioSameOptions, key) {
		return key, nil
	}
	known := slices.Concat(fioSameOptions, []string{"rwmixwrite"}, slices.Collect(maps.Keys(fioAliases)),
		slices.Collect(maps.Keys(fioIgnored)))
	slices.Sort(known)
	return "", fmt.Errorf("%s: not an option iolab fs takes from a job file; it takes %s", key, strings.Join(known, ", "))
}

// expandFioEnv replaces ${NAME} and $NAME with environment variables, as
// fio does; an unset one is an error rather than an empty value.
func expandFioEnv(s string) (string, error) {
	var missing string
	out := os.Expand(s, func(name string) string {
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
