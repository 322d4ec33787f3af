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

// S3Install is how to install each S3 server StartS3 starts.
var S3Install = map[string]string{
	"versitygw": "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0",
	"minio":     "go install github.com/minio/minio@latest",
}

// S3Binary is the path of S3 server name (versitygw or minio): on PATH,
// else in ~/go/bin where go install puts it; "" when neither has it.
func S3Binary(name string) string {
	if bin, err := exec.LookPath(name); err == nil {
		return bin
	}
	bin := filepath.Join(os.Getenv("HOME"), "go", "bin", name)
	if st, err := os.Stat(bin); err == nil && !st.IsDir() {
		return bin
	}
	return ""
}

// StartS3 starts versitygw or minio on a loopback port (0: a free one)
// with the given root credentials, data in work/data-NAME, and returns its
// endpoint, its pid and a function that stops it (it is stopped at the
// bench's end anyway: AtExit). It exits on failure, and when the server is
// not installed (S3Binary) saying how to install it.
func StartS3(work, name string, port int, accessKey, secretKey string) (string, int, func()) {
	bin := S3Binary(name)
	if bin == "" {
		if S3Install[name] == "" {
			Fatalf("S3 server %q: want versitygw or minio", name)
		}
		Fatalf("%s is not installed: %s", name, S3Install[name])
	}
	if port == 0 {
		port = freePort()
	}
	data := filepath.Join(work, "data-"+name)
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
