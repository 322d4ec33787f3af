package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/iolab/iolab/internal/workload/all" // the kinds, to know which split
)

// Each word reaches iolab as written, through bash, but a ${NAME}, which
// the task's shell fills in.
func TestQuoteThroughBash(t *testing.T) {
	words := []string{"plain", "with space", "it's", `"double"`, "$HOME", "`date`", "a;b|c&d", "", "new\nline",
		"http://u:${PW}@h/x", "Bearer ${TOKEN}", "${PW}${PW}", "*.txt"}
	cmd := exec.Command("bash", "-c", `printf '%s\0' `+quoteAll(words))
	cmd.Env = append(os.Environ(), "PW=sekrit", "TOKEN=tok")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	want := slices.Clone(words)
	for i, w := range want {
		want[i] = strings.NewReplacer("${PW}", "sekrit", "${TOKEN}", "tok").Replace(w)
	}
	if !slices.Equal(got, want) {
		t.Errorf("through bash:\n got %q\nwant %q", got, want)
	}
}

// What the script cannot carry or Slurm sets itself is refused, naming
// it; nothing it writes breaks out of its comment.
func TestJobRefusals(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.yaml")
	os.WriteFile(secret, []byte("variants: [{name: a, env: {AWS_SECRET_ACCESS_KEY: abc}}]\nworkloads: [{fs: {directory: /tmp, size: 1m}}]\n"), 0o644)
	j := Job{Segments: 2, Name: "load"}
	for _, c := range []struct {
		run  func() (string, error)
		want string
	}{
		{func() (string, error) { return j.Command([]string{"cmd", "true"}, nil) }, "cmd: iolab slurm job runs a load split into segments"},
		{func() (string, error) { return j.Command([]string{"fs", "--db", "x.db"}, nil) }, "--db: the store comes from IOLAB_DB"},
		{func() (string, error) { return j.Command([]string{"fs", "--segment=1/2"}, nil) }, "--segment: the segment comes from Slurm"},
		{func() (string, error) { return j.Command([]string{"s3", "--secret-key", "x"}, nil) }, "--secret-key: S3 keys come from AWS_ACCESS_KEY_ID"},
		{func() (string, error) { return j.Plan(secret) }, "holds secrets"},
		{func() (string, error) { bad := j; bad.Name = "a b"; return bad.Command([]string{"fs"}, nil) }, `--name "a b": want a job name`},
		{func() (string, error) {
			bad := j
			bad.Partition = "p\nrm -rf /"
			return bad.Command([]string{"fs"}, nil)
		}, `--partition "p\nrm -rf /": want a partition's name`},
		{func() (string, error) { bad := j; bad.Account = "a;b"; return bad.Command([]string{"fs"}, nil) }, `--account "a;b": want an account's name`},
	} {
		if _, err := c.run(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	script, err := j.Command([]string{"fs", "--name", "x\nrm -rf /"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(script, "\n"); !strings.HasPrefix(lines[1], "# iolab fs --name x rm -rf /") || !strings.HasPrefix(lines[2], "#SBATCH ") {
		t.Fatalf("a word of the command broke out of the comment:\n%s", script)
	}
}
