package plan

import (
	"strings"
	"testing"
)

// ${NAME} in a plan's values is iolab's environment's, as a shell would
// fill it; a command's is left to the shell that runs it (which also sees
// the variant's env:), and $${ is the text itself.
func TestEnvironmentInPlans(t *testing.T) {
	t.Setenv("IOLAB_PLAN_DATA", "/srv/data")
	t.Setenv("IOLAB_PLAN_EMPTY", "")
	text := `variants:
  - name: a
    env: {WHERE: "${IOLAB_PLAN_DATA}/a"}
    build: echo ${IOLAB_PLAN_DATA}
hooks: {before_run: 'ls ${WHERE}'}
workloads:
  - name: disk
    fs: {directory: "${IOLAB_PLAN_DATA}/fs${IOLAB_PLAN_EMPTY}", filename: "$${IOLAB_PLAN_DATA}", size: 1m}
  - name: tool
    cmd: {run: 'echo ${WHERE} ${#WHERE}'}
`
	p, err := Parse("p.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want string }{
		{p.Variants[0].Env["WHERE"], "/srv/data/a"},
		{p.Variants[0].Build, "echo ${IOLAB_PLAN_DATA}"},
		{p.Hooks.BeforeRun, "ls ${WHERE}"},
		{p.Workloads[0].Fields["directory"].Text, "/srv/data/fs"},
		{p.Workloads[0].Fields["filename"].Text, "${IOLAB_PLAN_DATA}"},
		{p.Workloads[1].Fields["run"].Text, "echo ${WHERE} ${#WHERE}"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
	_, err = Parse("p.yaml", []byte("workloads:\n  - fs: {directory: '${IOLAB_PLAN_UNSET}/x'}\n"))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:2:21: ${IOLAB_PLAN_UNSET}: not set in iolab's environment") {
		t.Errorf("an unset name: %v", err)
	}
	// Left as written: not a bare name.
	p, err = Parse("p.yaml", []byte("workloads:\n  - fs: {directory: '${IOLAB_PLAN_DATA:-/x}'}\n"))
	if err != nil || p.Workloads[0].Fields["directory"].Text != "${IOLAB_PLAN_DATA:-/x}" {
		t.Errorf("${NAME:-default}: %v %+v", err, p)
	}
}

// The YAML a plan cannot be read as says what to change for the usual
// mistakes: a tab in an indent, ${NAME} unquoted in a flow mapping.
func TestSyntaxErrorsSayTheRemedy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ text, want string }{
		{"variants:\n\t- name: a\n", "p.yaml:2:1: found character '\t' that cannot start any token; YAML indents with spaces, never tabs"},
		{"variants:\n  - name: a\n    git: {repo: ${HOME}/x, ref: main}\n", `a value holding ${NAME} inside {...} or [...] is quoted, as {repo: "${HOME}/x"}`},
	} {
		if _, err := Parse("p.yaml", []byte(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}
