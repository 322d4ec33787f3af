package cli

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// quirkyFront stands in front of a real S3 server (versitygw) and answers
// some requests as the stores of the field reports did: keys with "/" are
// flattened away (a PUT is acknowledged and dropped, a GET finds nothing,
// LIST under the prefix returns no key), multipart is not implemented (a
// plain-text 404), COPY answers 200 with an empty body, and LIST dates are
// not dates. Everything else passes through unchanged, signatures intact.
func quirkyFront(t *testing.T, srv s3Server) string {
	backend, err := url.Parse(srv.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	badDates := regexp.MustCompile(`<LastModified>[^<]*</LastModified>`)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2) // bucket, key
		key := ""
		if len(parts) == 2 {
			key = parts[1]
		}
		_, uploads := r.URL.Query()["uploads"]
		switch {
		case uploads || r.URL.Query().Get("uploadId") != "":
			http.NotFound(w, r) // "404 page not found", text/plain
		case r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "":
			w.WriteHeader(http.StatusOK) // no CopyObjectResult
		case strings.Contains(key, "/") && r.Method == http.MethodPut:
			io.Copy(io.Discard, r.Body)
			w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
			w.WriteHeader(http.StatusOK)
		case strings.Contains(key, "/"):
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
		case r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" && strings.HasPrefix(r.URL.Query().Get("prefix"), "baddates"):
			rec := httptest.NewRecorder()
			proxy.ServeHTTP(rec, r)
			body := badDates.ReplaceAll(rec.Body.Bytes(), []byte("<LastModified>last tuesday</LastModified>"))
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(rec.Code)
			w.Write(body)
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(front.Close)
	return front.URL
}

type s3ErrRun struct {
	Runs []struct {
		Status     string             `json:"status"`
		Error      string             `json:"error"`
		ErrorCodes map[string]int64   `json:"error_codes"`
		Extra      map[string]float64 `json:"extra"`
		Ops        map[string]s3OpJSON
	} `json:"runs"`
}

func s3Quirk(t *testing.T, endpoint string, args ...string) s3ErrRun {
	t.Helper()
	out, stderr, _ := iolab(t, t.Context(), append([]string{"s3", "--endpoint", endpoint, "--access-key", testAccessKey, "--secret-key", testSecretKey,
		"--rounds=1", "--warmup=0", "--json",
		"--db", filepath.Join(t.TempDir(), "x.db"), "--bucket", "quirks", "--create-bucket"}, args...)...)
	var r s3ErrRun
	if out == "" {
		t.Fatalf("no report: %s", stderr)
	}
	decodeInto(t, out, &r)
	if len(r.Runs) != 1 {
		t.Fatalf("runs %+v", r.Runs)
	}
	return r
}

// What a store that is not quite S3 answers is what the errors say; a
// store that flattens "/" is measured with --key-layout flat.
func TestS3QuirkyStores(t *testing.T) {
	t.Parallel()
	srv := s3Servers(t)[0]
	front := quirkyFront(t, srv)
	for _, tc := range []struct {
		name string
		args []string
		code string // in error_codes
		msg  string // in the run's error
	}{
		{"flattened keys", []string{"--mix", "list", "--count", "20", "--objects", "10"}, "list:list-short",
			"list: LIST returned fewer keys than were written: 0 keys under"},
		{"unsupported multipart", []string{"--mix", "multipart", "--size", "6m", "--count", "2", "--key-layout", "flat"}, "multipart:404",
			`multipart: HTTP 404, no S3 error in the answer; the body begins "404 page not found" (19 bytes); multipart not supported by this server?`},
		{"copy without a result", []string{"--mix", "copy", "--count", "4", "--objects", "4", "--key-layout", "flat"}, "copy:malformed-response",
			"copy: HTTP 200, but not the answer S3 gives: a malformed success (200 OK); copy not supported by this server?"},
		{"list dates", []string{"--mix", "list", "--count", "4", "--objects", "4", "--key-layout", "flat", "--prefix", "baddates"},
			"list:malformed-response", "list: an answer that does not parse as S3's"},
	} {
		r := s3Quirk(t, front, tc.args...)
		run := r.Runs[0]
		if run.Status == "ok" || run.ErrorCodes[tc.code] == 0 || !strings.Contains(run.Error, tc.msg) {
			t.Errorf("%s: status %s, codes %v, error %q; want %s and %q", tc.name, run.Status, run.ErrorCodes, run.Error, tc.code, tc.msg)
		}
	}
	// The same flattening store measured with keys that hold no "/".
	r := s3Quirk(t, front, "--mix", "list=1,get=1", "--count", "40", "--objects", "10", "--key-layout", "flat", "--verify")
	run := r.Runs[0]
	if run.Status != "ok" || run.Ops["list"].Ops == 0 || run.Ops["list"].Bytes != 0 || run.Extra["list_keys"] < 10*float64(run.Ops["list"].Ops) ||
		run.Extra["list_keys_per_s"] <= 0 || run.Ops["get"].Errors != 0 {
		t.Errorf("--key-layout flat: %+v", run)
	}
	// Keys from a template.
	r = s3Quirk(t, front, "--mix", "put", "--count", "3", "--key-layout", "bench_{stamp}_{name}", "--verify", "--keep", "--prefix", "tmpl")
	if r.Runs[0].Status != "ok" {
		t.Errorf("template layout: %+v", r.Runs[0])
	}
	entries, _ := os.ReadDir(filepath.Join(srv.dataDir, "quirks"))
	found := false
	for _, e := range entries {
		found = found || strings.HasPrefix(e.Name(), "bench_") && strings.Contains(e.Name(), "_run1-w")
	}
	if !found {
		t.Errorf("no bench_<stamp>_run1-w... object in %s", filepath.Join(srv.dataDir, "quirks"))
	}
}

// A wrong secret: the start-up check says what the server said, not a
// guess from a HEAD answer without a body.
func TestS3ServerSaysWhy(t *testing.T) {
	t.Parallel()
	srv := s3Servers(t)[0]
	_, _, err := iolab(t, t.Context(), "s3", "--endpoint", srv.endpoint, "--bucket", "quirks2", "--access-key", testAccessKey,
		"--secret-key", "not-the-secret", "--count", "1", "--db", filepath.Join(t.TempDir(), "x.db"))
	if err == nil || !strings.Contains(err.Error(), "HTTP 403 SignatureDoesNotMatch") || strings.Contains(err.Error(), "not-the-secret") {
		t.Fatalf("wrong secret: %v", err)
	}
}

// --ca trusts a server's own certificate: versitygw over TLS with a
// certificate made here; without --ca the run is refused and says how.
func TestS3CA(t *testing.T) {
	t.Parallel()
	bin := versitygwBin(t)
	dir := t.TempDir()
	certFile, keyFile := selfSigned(t, dir)
	port := freeLoopbackPort(t)
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	cmd := exec.Command(bin, "--port", fmt.Sprintf("127.0.0.1:%d", port), "--cert", certFile, "--key", keyFile, "posix", data)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+testAccessKey, "ROOT_SECRET_KEY="+testSecretKey)
	if err := startDying(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("versitygw over TLS did not start")
		}
	}
	endpoint := "https://" + addr
	r := s3Quirk(t, endpoint, "--ca", certFile, "--mix", "put=1,get=1", "--count", "20", "--verify")
	if r.Runs[0].Status != "ok" || r.Runs[0].Ops["get"].Ops == 0 {
		t.Fatalf("with --ca: %+v", r.Runs[0])
	}
	_, _, err := iolab(t, t.Context(), "s3", "--endpoint", endpoint, "--bucket", "quirks", "--count", "1", "--db", filepath.Join(dir, "y.db"))
	if err == nil || !strings.Contains(err.Error(), "TLS certificate not trusted") || !strings.Contains(err.Error(), "--ca FILE") {
		t.Fatalf("without --ca: %v", err)
	}
	_, _, err = iolab(t, t.Context(), "s3", "--endpoint", endpoint, "--bucket", "quirks", "--count", "1", "--ca", keyFile, "--db", filepath.Join(dir, "y.db"))
	if err == nil || !strings.Contains(err.Error(), "--ca "+keyFile+": no PEM certificate") {
		t.Fatalf("--ca of a key file: %v", err)
	}
	// Objects kept over TLS are checked later over TLS: s3 verify takes
	// --ca as s3 does, and the run's --lookup from the store.
	kept := filepath.Join(dir, "kept.db")
	if _, stderr, err := iolab(t, t.Context(), "s3", "--endpoint", endpoint, "--access-key", testAccessKey, "--secret-key", testSecretKey,
		"--ca", certFile, "--lookup", "path", "--bucket", "quirks", "--mix", "put=1", "--count", "6", "--keep", "--rounds=1", "--warmup=0", "--db", kept); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	verify := []string{"s3", "verify", "--db", kept, "--access-key", testAccessKey, "--secret-key", testSecretKey}
	if _, _, err := iolab(t, t.Context(), verify...); err == nil || !strings.Contains(err.Error(), "TLS certificate not trusted") {
		t.Fatalf("verify without --ca: %v", err)
	}
	out, _, err := iolab(t, t.Context(), append(verify, "--ca", certFile)...)
	if err != nil || !strings.Contains(out, "6 objects checked, 0 differ, 0 missing") {
		t.Fatalf("verify --ca: %v\n%s", err, out)
	}
	if show, _, _ := iolab(t, t.Context(), "show", "--db", kept, "--json"); !strings.Contains(show, `"lookup": "path"`) {
		t.Errorf("the run's --lookup is not stored for verify:\n%s", show)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "iolab test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return cert, key
}

// Two endpoints (two fronts of one server): the workers are spread over
// both, and each one's figures are shown beside the total.
func TestS3SeveralEndpoints(t *testing.T) {
	t.Parallel()
	srv := s3Servers(t)[0]
	a, b := quirkyFront(t, srv), quirkyFront(t, srv)
	r := s3Quirk(t, a+","+b, "--mix", "put=1,get=1", "--count", "80", "--concurrency", "4", "--key-layout", "flat", "--verify")
	run := r.Runs[0]
	e1, e2 := run.Extra["endpoint.1.ops_per_s"], run.Extra["endpoint.2.ops_per_s"]
	if run.Status != "ok" || e1 <= 0 || e2 <= 0 || run.Extra["endpoint.1.lat_p99_ns"] <= 0 {
		t.Fatalf("two endpoints: %+v", run)
	}
	out, _, err := iolab(t, t.Context(), "s3", "--endpoint", a, "--endpoint", b, "--access-key", testAccessKey, "--secret-key", testSecretKey,
		"--bucket", "quirks", "--mix", "get", "--count", "40",
		"--concurrency", "2", "--key-layout", "flat", "--rounds=1", "--warmup=0", "--db", filepath.Join(t.TempDir(), "x.db"))
	if err != nil || !strings.Contains(out, "endpoint 1 ops/s") || !strings.Contains(out, "endpoint 2 lat p99") ||
		!bytes.Contains([]byte(out), []byte(strings.TrimPrefix(b, "http://"))) {
		t.Fatalf("repeated --endpoint: %v\n%s", err, out)
	}
}
