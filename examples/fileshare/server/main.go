// Command server is a small stand-in for a file-sharing server (the kind
// in ../../../shared field reports: uploads stored in chunks, downloads by
// id, a login that issues a fresh session per process), for iolab's
// examples and tests. It is not a product: it exists to be measured.
//
//	POST /api/auth     passphrase=$PS_SHARED_SECRET (form) -> session cookie
//	POST /api/entry    multipart field "file" -> {"id": "..."}   (session needed)
//	GET  /-ID          the file                                  (session needed)
//	GET  /burn/N       burns N ms of CPU (on this request's thread)
//	GET  /healthz      200 once serving
//	/debug/pprof/      Go's profiler
//
// -chunk-size is the size of the chunks uploads are written in (what one
// of the field report's branches changed); -hold-mib allocates and touches
// that much memory at start and keeps it (a server that needs it).
package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	_ "net/http/pprof" //nolint:gosec // a loopback test server
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var held []byte

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	data := flag.String("data", "", "directory for uploads (default: a temp dir)")
	chunk := flag.String("chunk-size", "320k", "write uploads in chunks of this size (k, m suffixes)")
	hold := flag.Int("hold-mib", 0, "allocate and keep this many MiB from start")
	checksum := flag.Bool("checksum", false, "keep a SHA-256 of every upload (what another branch does)")
	flag.Parse()
	chunkSize, err := parseSize(*chunk)
	if err != nil {
		log.Fatalf("-chunk-size %q: %v", *chunk, err)
	}
	if *hold > 0 {
		held = make([]byte, *hold<<20)
		for i := 0; i < len(held); i += 4096 {
			held[i] = 1
		}
	}
	if *data == "" {
		if *data, err = os.MkdirTemp("", "fileshare-"); err != nil {
			log.Fatal(err)
		}
	}
	if err := os.MkdirAll(*data, 0o755); err != nil {
		log.Fatal(err)
	}
	s := &server{dir: *data, chunk: chunkSize, checksum: *checksum, secret: os.Getenv("PS_SHARED_SECRET"), session: randomHex(16)}
	http.HandleFunc("POST /api/auth", s.auth)
	http.HandleFunc("POST /api/entry", s.upload)
	http.HandleFunc("GET /{id}", s.download)
	http.HandleFunc("GET /burn/{ms}", burn)
	http.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok", len(held)) })
	log.Fatal(http.ListenAndServe(*listen, nil)) //nolint:gosec // a loopback test server
}

type server struct {
	dir      string
	chunk    int
	checksum bool
	secret   string
	session  string // fresh for every start: a client must log in again
	mu       sync.Mutex
	next     int
}

func (s *server) auth(w http.ResponseWriter, r *http.Request) {
	if s.secret == "" || r.FormValue("passphrase") != s.secret {
		http.Error(w, "wrong passphrase", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: "session", Value: s.session, Path: "/", HttpOnly: true})
	fmt.Fprintln(w, "{}")
}

func (s *server) authorized(w http.ResponseWriter, r *http.Request) bool {
	c, err := r.Cookie("session")
	if err != nil || c.Value != s.session {
		http.Error(w, "log in first", http.StatusUnauthorized)
		return false
	}
	return true
}

func (s *server) upload(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for {
		part, err := mr.NextPart()
		if err != nil {
			http.Error(w, "no file field", http.StatusBadRequest)
			return
		}
		if part.FormName() != "file" {
			continue
		}
		s.mu.Lock()
		s.next++
		id := fmt.Sprintf("f%06d%s", s.next, randomHex(4))
		s.mu.Unlock()
		if err := s.store(id, part); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"id": id})
		return
	}
}

// store writes the body in chunks of the configured size, each its own
// write, as a chunked store would.
func (s *server) store(id string, body io.Reader) error {
	f, err := os.Create(filepath.Join(s.dir, id))
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, s.chunk)
	sum := sha256.New()
	for {
		n, err := io.ReadFull(body, buf)
		if n > 0 {
			if _, werr := f.Write(buf[:n]); werr != nil {
				return werr
			}
			if s.checksum {
				sum.Write(buf[:n])
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if s.checksum {
				if err := os.WriteFile(f.Name()+".sha256", []byte(hex.EncodeToString(sum.Sum(nil))), 0o644); err != nil {
					return err
				}
			}
			return f.Sync()
		}
		if err != nil {
			return err
		}
	}
}

func (s *server) download(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.PathValue("id"), "-")
	if !ok || strings.ContainsAny(id, "/.") || !s.authorized(w, r) {
		http.NotFound(w, r)
		return
	}
	http.ServeFile(w, r, filepath.Join(s.dir, id))
}

// burn spins until this thread has used the CPU time asked for.
func burn(w http.ResponseWriter, r *http.Request) {
	ms, err := strconv.Atoi(r.PathValue("ms"))
	if err != nil || ms < 0 || ms > 60_000 {
		http.Error(w, "want /burn/MILLISECONDS", http.StatusBadRequest)
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	var x uint64
	for threadCPU()-start < time.Duration(ms)*time.Millisecond {
		x += spin(20000)
	}
	fmt.Fprintln(w, "burned", ms, "ms", x%2)
}

// spin is where /burn spends its time: a profile names it first.
//
//go:noinline
func spin(n int) uint64 {
	x := uint64(88172645463325252)
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func parseSize(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1<<10, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "m"):
		mult, s = 1<<20, strings.TrimSuffix(s, "m")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1<<30/mult {
		return 0, fmt.Errorf("want a size such as 320k or 4m")
	}
	return n * mult, nil
}
