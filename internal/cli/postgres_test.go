package cli

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/pgtest"
)

// Every command on a PostgreSQL store: two fs experiments stored there,
// shown, listed, followed in history, drawn as a report, a plan run; the
// password in the URL is nowhere — not in the
// database, not in what was printed.
func TestCommandsOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	db := strings.Replace(url, "postgres://postgres@", "postgres://postgres:hunter2pw@", 1) // the test server trusts any password
	dir := t.TempDir()
	var printed strings.Builder
	run := func(args ...string) string {
		t.Helper()
		out, stderr, err := iolab(t, context.Background(), append(args, "--db", db)...)
		printed.WriteString(out + stderr)
		if err != nil {
			t.Fatalf("%v: %v\n%s\n%s", args, err, out, stderr)
		}
		return out
	}
	for range 2 {
		run("fs", "--directory", dir, "--rw=randread", "--size=1m", "--io_size=256k", "--rounds=2", "--warmup=0", "-q")
	}
	if out := run("ls"); strings.Count(out, "fs ") < 2 {
		t.Fatalf("ls:\n%s", out)
	}
	if out := run("show", "--json"); !strings.Contains(out, `"cells"`) {
		t.Fatalf("show:\n%s", out)
	}
	if out := run("history", "randread-4k"); !strings.Contains(out, "randread-4k") {
		t.Fatalf("history:\n%s", out)
	}
	html := filepath.Join(dir, "r.html")
	run("report", "-o", html)
	if st, err := os.Stat(html); err != nil || st.Size() < 10_000 {
		t.Fatalf("report: %v", err)
	}
	writeFiles(t, dir, map[string]string{"plan.yaml": `rounds: 2
warmup: 0
workloads:
  - name: c
    cmd: {run: "true"}
`})
	run("experiment", filepath.Join(dir, "plan.yaml"), "-q")
	if out := run("ls"); strings.Count(out, "\n") < 4 {
		t.Fatalf("ls after the plan:\n%s", out)
	}

	if strings.Contains(printed.String(), "hunter2pw") {
		t.Errorf("the password was printed")
	}
	conn, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRow(`SELECT count(*) FROM experiments WHERE command LIKE '%hunter2pw%' OR plan LIKE '%hunter2pw%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d experiments store the password (%v)", n, err)
	}
	if err := conn.QueryRow(`SELECT count(*) FROM experiments WHERE command LIKE '%postgres://postgres:***@%'`).Scan(&n); err != nil || n == 0 {
		t.Errorf("the stored command lines do not show --db masked (%v)", err)
	}
}

// compare, note and s3 verify on PostgreSQL, as on SQLite.
func TestCompareNoteAndVerifyOnPostgres(t *testing.T) {
	t.Parallel()
	db, dir := pgtest.Database(t), t.TempDir()
	run := func(args ...string) (string, error) {
		t.Helper()
		out, stderr, err := iolab(t, context.Background(), append(args, "--db", db)...)
		if err != nil {
			err = fmt.Errorf("%v: %w\n%s", args, err, stderr)
		}
		return out, err
	}
	var ids []string
	for range 2 {
		out, err := run("fs", "--directory", dir, "--rw=randread", "--size=1m", "--io_size=256k", "--rounds=2", "--warmup=0", "-q", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ ID string }
		decodeInto(t, out, &r)
		ids = append(ids, r.ID)
	}
	if out, err := run("compare", ids[0], ids[1]); err != nil || !strings.Contains(out, "randread-4k") {
		t.Fatalf("compare (%v):\n%s", err, out)
	}
	if _, err := run("note", ids[0], "VM-7: virtio queue depth 256"); err != nil {
		t.Fatal(err)
	}
	if out, err := run("ls"); err != nil || !strings.Contains(out, "VM-7: virtio queue depth 256") {
		t.Fatalf("ls after a note (%v):\n%s", err, out)
	}
	srv := s3Servers(t)[0]
	if _, err := run("s3", "--endpoint", srv.endpoint, "--access-key", testAccessKey, "--secret-key", testSecretKey, "--bucket", "pgverify", "--create-bucket",
		"--mix", "put", "--size", "4k", "--count", "12", "--concurrency", "3", "--rounds=1", "--warmup=0", "--keep", "-q"); err != nil {
		t.Fatal(err)
	}
	if out, err := run("s3", "verify", "--access-key", testAccessKey, "--secret-key", testSecretKey); err != nil || !strings.Contains(out, "12 objects checked, 0 differ, 0 missing") {
		t.Fatalf("s3 verify (%v):\n%s", err, out)
	}
}

// kill -9 of a plan's runner on PostgreSQL, then --resume: every
// scheduled run is done exactly once, and none is left as running.
func TestKillNineThenResumeOnPostgres(t *testing.T) {
	t.Parallel()
	bin, dir, db := buildIolab(t), t.TempDir(), pgtest.Database(t)
	napPlan(t, dir, "resume", 0.15)
	plan := filepath.Join(dir, "plan.yaml")
	first := exec.Command(bin, "experiment", plan, "--db", db, "-q")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	count := func(q string) int {
		var n int
		_ = conn.QueryRow(q).Scan(&n)
		return n
	}
	for deadline := time.Now().Add(60 * time.Second); count(`SELECT count(*) FROM runs WHERE status != 'running'`) < 5 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	_ = first.Process.Signal(syscall.SIGKILL)
	_ = first.Wait()
	if n := count(`SELECT count(*) FROM runs WHERE status != 'running'`); n < 5 || n >= 14 {
		t.Fatalf("%d runs stored before the kill", n)
	}
	out, err := exec.Command(bin, "experiment", plan, "--db", db, "--resume", "--json", "-q").Output()
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	everyRunOnce(t, out, 14)
	if n := count(`SELECT count(*) FROM runs WHERE status = 'running'`); n != 0 {
		t.Fatalf("%d runs still marked running after the resume", n)
	}
}
