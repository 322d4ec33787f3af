package cli

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/pgtest"
)

// Every command on a PostgreSQL store: two fs experiments stored there,
// shown, listed, compared, followed in history, drawn as a report, a plan
// run and resumed; the password in the URL is nowhere — not in the
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
