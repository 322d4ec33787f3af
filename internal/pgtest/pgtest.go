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
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/procgroup"
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
	srv, err := newServer()
	if err != nil {
		why = err.Error()
		return
	}
	if err := srv.Start(); err != nil {
		why = err.Error()
		return
	}
	server = srv.root
}

// Server is a PostgreSQL server: the one the test binary shares, or one a
// test has to itself (Private), which it may stop and start again.
type Server struct {
	dir, data string
	port      int
	cred      *syscall.Credential
	root      string // postgres://postgres@127.0.0.1:PORT
	cmd       *exec.Cmd
	exited    chan struct{}
}

// Private starts a server of the test's own, with one database, whose URL
// URL returns; it stops with the test.
func Private(t testing.TB) *Server {
	t.Helper()
	once.Do(start) // finds the binaries, or says why not, as Database does
	if server == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL: %s; .ci/run installs it (apt-get install postgresql)", why)
		}
		t.Skipf("PostgreSQL: %s", why)
	}
	srv, err := newServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(); _ = os.RemoveAll(srv.dir) })
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", srv.root+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE t"); err != nil {
		t.Fatal(err)
	}
	return srv
}

// URL is the server's test database.
func (s *Server) URL() string { return s.root + "/t?sslmode=disable" }

// newServer makes a server's data directory (initdb) and picks its port.
func newServer() (*Server, error) {
	initdb := bin("initdb")
	if initdb == "" || bin("postgres") == "" {
		return nil, errors.New("initdb and postgres not found (on PATH or in /usr/lib/postgresql/*/bin)")
	}
	dir, err := os.MkdirTemp("", "iolab-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, data: filepath.Join(dir, "data")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, errors.New("running as root and there is no postgres user to run the server as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		_ = os.Chown(dir, uid, gid)
	}
	cmd := exec.Command(initdb, "-D", s.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	s.root = fmt.Sprintf("postgres://postgres@127.0.0.1:%d", s.port)
	return s, nil
}

// Start starts the server (again, after Stop: same data, same port) and
// waits until it accepts connections.
func (s *Server) Start() error {
	// fsync off: a test server's data need not survive a crash.
	cmd := exec.Command(bin("postgres"), "-D", s.data, "-p", strconv.Itoa(s.port), "-h", "127.0.0.1", "-k", s.dir, "-F", "-c", "max_connections=200")
	log, _ := os.OpenFile(filepath.Join(s.dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	cmd.Stdout, cmd.Stderr = log, log
	// The server dies with the test binary. The parent-death signal is the
	// starting thread's, so a thread that never exits starts it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := procgroup.Start(cmd); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(s.exited) }()
	db, _ := sql.Open("pgx", s.root+"/postgres?sslmode=disable")
	defer db.Close()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if db.Ping() == nil {
			return nil
		}
	}
	b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	return fmt.Errorf("postgres did not accept connections in 60s: %s", b)
}

// Stop shuts the server down as pg_ctl stop -m fast does (SIGINT: every
// connection cut, no wait for clients) and waits for it to exit.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}
