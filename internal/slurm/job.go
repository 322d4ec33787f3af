// Package slurm writes the batch script that runs a load in segments
// under Slurm, as `iolab slurm job` prints it: sbatch allocates N tasks,
// srun starts iolab once a task, and each takes its segment from Slurm's
// environment (segment.Launchers: SLURM_PROCID of SLURM_STEP_NUM_TASKS,
// the load named from the job's and the step's IDs), meeting the others
// in the store. Nothing secret is written in the script: the store and
// the S3 keys come from the environment sbatch was given (it exports
// the submitter's to the tasks), a secret in the command is a ${NAME}
// the tasks' shell fills in.
package slurm

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/workload"
)

// Job is the batch script's settings (the flags of `iolab slurm job`).
type Job struct {
	Segments int
	// PerNode is how many segments share a node (--ntasks-per-node): 1
	// spreads them one a node, as the load's clients are meant to be
	// apart; 0 lets Slurm pack them.
	PerNode   int
	Name      string
	Partition string
	Account   string
	Time      time.Duration
	// Program is iolab's path on the nodes.
	Program string
}

// ref is a reference to a variable of the tasks' environment: what a
// secret in the command is written as.
var ref = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`) })

// IsRef says v holds a ${NAME} reference (after a scheme word, "Bearer
// ${API_TOKEN}", or in a URL): a secret the tasks' shell fills in.
func IsRef(v string) bool { return ref().MatchString(v) }

// launchFlags are what the script's environment and Slurm give each
// segment: not to be written in its command.
var launchFlags = map[string]string{
	"--segment": "the segment comes from Slurm (SLURM_PROCID of SLURM_STEP_NUM_TASKS)", "--segment-group": "the load is named from the job's ID",
	"--start-at": "the segments meet at a barrier in the store", "--db": "the store comes from IOLAB_DB, exported before sbatch",
	"--access-key": "S3 keys come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, exported before sbatch", "--secret-key": "S3 keys come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, exported before sbatch",
}

// jobName and slurmName are what the script's #SBATCH lines take: a
// newline or a space there would end the option and start a command.
var (
	jobName   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })
	slurmName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`) })
)

// Command is the script running an iolab command line in segments; check
// is iolab's own parse of it.
func (j *Job) Command(command []string, check func([]string) error) (string, error) {
	if err := j.checkCommand(command, false, check); err != nil {
		return "", err
	}
	return j.script(fmt.Sprintf("iolab %s in %d segments", strings.Join(command, " "), j.Segments), "", j.srun(quoteAll(command))), nil
}

// Plan is the script running experiment PLAN in segments: the plan is in
// the script, written on the batch host and copied to each node's own
// (sbcast) before the tasks start. A plan that holds secrets is refused:
// a batch script is kept in Slurm's spool and accounting.
func (j *Job) Plan(path string) (string, error) {
	text, _, err := plan.ForLaunch(path, "the script carries its plan, and Slurm keeps scripts", "S3 keys come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, exported before sbatch")
	if err != nil {
		return "", err
	}
	if err := j.checkCommand([]string{"experiment", path}, true, nil); err != nil {
		return "", err
	}
	body := string(text)
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	if strings.Contains("\n"+body, "\n"+planEnd+"\n") {
		return "", badinput.Errorf("%s: a line of it is %s, which ends the plan in the script", path, planEnd)
	}
	setup := `plan="${TMPDIR:-/tmp}/iolab-plan-$SLURM_JOB_ID.yaml"
cat > "$plan" <<'` + planEnd + "'\n" + body + planEnd + `
sbcast --force "$plan" "$plan"  # each node's own copy, where its task reads it
`
	return j.script(fmt.Sprintf("iolab experiment %s in %d segments", path, j.Segments), setup, j.srun(`experiment "$plan"`)), nil
}

const planEnd = "IOLAB_PLAN_END"

func (j *Job) program() string {
	if j.Program == "" {
		return "iolab"
	}
	return j.Program
}

// srun is the line starting a task a segment, each running iolab with
// args (shell words).
func (j *Job) srun(args string) string {
	return "srun " + quote(j.program()) + " " + args + "\n"
}

// checkCommand refuses a script that cannot run: its name, a command that
// does not split into segments (unless it runs a plan), a flag the script
// sets itself, and what check (iolab's own parse) refuses.
func (j *Job) checkCommand(command []string, ofPlan bool, check func([]string) error) error {
	switch {
	case !jobName().MatchString(j.Name):
		return badinput.Errorf("--name %q: want a job name of letters, digits, ., _ and - (at most 64)", j.Name)
	case j.Segments < 1:
		return badinput.Errorf("--segments %d: want at least 1", j.Segments)
	case j.Partition != "" && !slurmName().MatchString(j.Partition):
		return badinput.Errorf("--partition %q: want a partition's name (letters, digits, ., _ and -)", j.Partition)
	case j.Account != "" && !slurmName().MatchString(j.Account):
		return badinput.Errorf("--account %q: want an account's name (letters, digits, ., _ and -)", j.Account)
	case !ofPlan && !workload.Splits(command[0]):
		return badinput.Errorf("%s: iolab slurm job runs a load split into segments: %s, or a plan of them", command[0], strings.Join(workload.SplittingKinds(), ", "))
	}
	for _, a := range command {
		for f, why := range launchFlags {
			if a == f || strings.HasPrefix(a, f+"=") {
				return badinput.Errorf("%s: %s; leave it out", f, why)
			}
		}
	}
	if check != nil {
		return check(command)
	}
	return nil
}

// script is the batch script: sbatch's options, the store's check, setup,
// then run.
func (j *Job) script(what, setup, run string) string {
	var b strings.Builder
	what = strings.NewReplacer("\n", " ", "\r", " ").Replace(what) // a comment of one line
	fmt.Fprintf(&b, "#!/bin/bash\n# %s: sbatch this (IOLAB_DB exported: the store every segment writes to)\n", what)
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n#SBATCH --ntasks=%d\n", j.Name, j.Segments)
	if j.PerNode > 0 {
		fmt.Fprintf(&b, "#SBATCH --ntasks-per-node=%d\n", j.PerNode)
	}
	if j.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", j.Partition)
	}
	if j.Account != "" {
		fmt.Fprintf(&b, "#SBATCH --account=%s\n", j.Account)
	}
	if j.Time > 0 {
		m := int((j.Time + time.Minute - 1) / time.Minute)
		fmt.Fprintf(&b, "#SBATCH --time=%d:%02d:00\n", m/60, m%60)
	}
	fmt.Fprintf(&b, "#SBATCH --output=%s-%%j.out\n", j.Name)
	b.WriteString("set -euo pipefail\n")
	b.WriteString(`: "${IOLAB_DB:?export IOLAB_DB before sbatch: the store the segments meet in (postgres://..., or a file every node sees); it is not written in this script}"` + "\n")
	b.WriteString(setup)
	b.WriteString(run)
	return b.String()
}

// quoteAll quotes a command line for the shell, each word as it is but
// for ${NAME} references, which the shell fills in.
func quoteAll(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = quote(w)
	}
	return strings.Join(out, " ")
}

// quote is w as one shell word: single-quoted, a ${NAME} left for the
// shell to fill in.
func quote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,") == "" {
		return w
	}
	var b strings.Builder
	last := 0
	for _, m := range ref().FindAllStringIndex(w, -1) {
		if m[0] > last {
			b.WriteString("'" + strings.ReplaceAll(w[last:m[0]], "'", `'\''`) + "'")
		}
		b.WriteString(`"` + w[m[0]:m[1]] + `"`)
		last = m[1]
	}
	if last < len(w) || last == 0 {
		b.WriteString("'" + strings.ReplaceAll(w[last:], "'", `'\''`) + "'")
	}
	return b.String()
}
