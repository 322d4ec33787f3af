package harness

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iolab/iolab/internal/procgroup"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartS3 starts versitygw or minio on a loopback port (0: a free one)
// with the given root credentials, data in work/data, and returns its
// endpoint, its pid and a function that stops it (it is stopped at the
// bench's end anyway: AtExit). The binary is looked up on PATH, then in
// ~/go/bin where go install puts it; it exits on failure.
func StartS3(work, name string, port int, accessKey, secretKey string) (string, int, func()) {
	bin, err := exec.LookPath(name)
	if err != nil {
		bin = filepath.Join(os.Getenv("HOME"), "go", "bin", name)
	}
	if port == 0 {
		port = freePort()
	}
	data := filepath.Join(work, "data")
	os.MkdirAll(data, 0o755)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--port", addr, "posix", data)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+accessKey, "ROOT_SECRET_KEY="+secretKey)
	if name == "minio" {
		cmd = exec.Command(bin, "server", data, "--address", addr, "--quiet")
		cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+accessKey, "MINIO_ROOT_PASSWORD="+secretKey)
	}
	// It dies with the bench, however the bench ends (log.Fatal skips
	// the deferred stop).
	// Forked from a thread that lives as long as the bench: Pdeathsig
	// follows the forking thread.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := procgroup.Start(cmd); err != nil {
		Fatalf("start %s: %v", name, err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) }
	AtExit(stop)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; i < 200; i++ {
		if resp, err := http.Get(endpoint); err == nil {
			resp.Body.Close()
			return endpoint, cmd.Process.Pid, stop
		}
		time.Sleep(50 * time.Millisecond)
	}
	Fatalf("%s did not start", name)
	return "", 0, nil
}

// MakeBucket creates bucket on the server at endpoint and returns a client
// with the given root credentials; it exits on failure.
func MakeBucket(endpoint, accessKey, secretKey, bucket string) *minio.Client {
	mc, err := minio.New(strings.TrimPrefix(endpoint, "http://"), &minio.Options{Creds: credentials.NewStaticV4(accessKey, secretKey, "")})
	if err != nil {
		Fatal(err)
	}
	if err := mc.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err != nil {
		Fatalf("make bucket %s: %v", bucket, err)
	}
	return mc
}
