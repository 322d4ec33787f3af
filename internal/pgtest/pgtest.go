// Package pgtest gives tests a real PostgreSQL: Debian's server binaries,
// started once per test binary in a temporary directory on a loopback
// port (as the postgres user when the tests run as root, which initdb
// refuses), trusting local connections; each test gets a new database.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx"
)

var (
	once   sync.Once
	server string // postgres://postgres@127.0.0.1:PORT, or "" when it could not start
	why    string // why it could not
	dbs    atomic.Int64
)

// Database returns the URL of a new, empty database on the test server.
// Without PostgreSQL installed the test is skipped, except in CI (.ci/run
// installs it), where that fails.
func Database(t testing.TB) string {
	t.Helper()
	url, err := NewDatabase()
	if errors.Is(err, errNoServer) {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL: %v; .ci/run installs it (apt-get install postgresql)", err)
		}
		t.Skipf("PostgreSQL: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return url
}

var errNoServer = errors.New("no PostgreSQL server")

// NewDatabase starts the server if it is not running and returns the URL
// of a new, empty database on it (for benchmarks; tests use Database).
func NewDatabase() (string, error) {
	once.Do(start)
	if server == "" {
		return "", fmt.Errorf("%w: %s", errNoServer, why)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbs.Add(1))
	admin, err := sql.Open("pgx", server+"/postgres?sslmode=disable")
	if err != nil {
		return "", err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	return server + "/" + name + "?sslmode=disable", nil
}

// bin finds a PostgreSQL program: on PATH, else in Debian's versioned
// directory (the newest).
func bin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if p := filepath.Join(d, name); fileExists(p) {
			return p
		}
	}
	return ""
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// removeStale removes the directories of servers whose test binaries have
// ended (the servers died with them): about 60 MB each.
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "iolab-pg-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid"))
		if err == nil {
			pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
			if pid > 0 && syscall.Kill(pid, 0) == nil {
				continue // still serving another test binary
			}
		} else if st, err := os.Stat(d); err != nil || time.Since(st.ModTime()) < 10*time.Minute {
			continue // another binary may be setting it up
		}
		_ = os.RemoveAll(d)
	}
}

func start() {
	removeStale()
	initdb, postgres := bin("initdb"), bin("postgres")
	if initdb == "" || postgres == "" {
		why = "initdb and postgres not found (on PATH or in /usr/lib/postgresql/*/bin)"
		return
	}
	dir, err := os.MkdirTemp("", "iolab-pg-")
	if err != nil {
		why = err.Error()
		return
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			why = "running as root and there is no postgres user to run the server as"
			return
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		_ = os.Chown(dir, uid, gid)
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		why = fmt.Sprintf("initdb: %v: %s", err, out)
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		why = err.Error()
		return
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// fsync off: a test server's data need not survive a crash.
	cmd = exec.Command(postgres, "-D", data, "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", dir, "-F", "-c", "max_connections=200")
	log, _ := os.Create(filepath.Join(dir, "log"))
	cmd.Stdout, cmd.Stderr = log, log
	// The server dies with the test binary. The parent-death signal is the
	// starting thread's, so a thread that never exits starts it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		started <- cmd.Start()
		select {} // keeps the thread, and with it the server, for the binary's life
	}()
	if err := <-started; err != nil {
		why = "postgres: " + err.Error()
		return
	}
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d", port)
	db, _ := sql.Open("pgx", url+"/postgres?sslmode=disable")
	defer db.Close()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if db.Ping() == nil {
			server = url
			return
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	why = "postgres did not accept connections in 60s: " + string(b)
}
