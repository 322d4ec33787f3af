package harness

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartS3 starts versitygw or minio on a free loopback port with the given
// root credentials, data in work/data, and returns its endpoint, its pid and
// a function that stops it. The binary is looked up on PATH, then in
// ~/go/bin where go install puts it; it exits on failure.
func StartS3(work, name, accessKey, secretKey string) (string, int, func()) {
	bin, err := exec.LookPath(name)
	if err != nil {
		bin = filepath.Join(os.Getenv("HOME"), "go", "bin", name)
	}
	port := freePort()
	data := filepath.Join(work, "data")
	os.MkdirAll(data, 0o755)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--port", addr, "posix", data)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+accessKey, "ROOT_SECRET_KEY="+secretKey)
	if name == "minio" {
		cmd = exec.Command(bin, "server", data, "--address", addr, "--quiet")
		cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+accessKey, "MINIO_ROOT_PASSWORD="+secretKey)
	}
	if err := cmd.Start(); err != nil {
		log.Fatalf("start %s: %v", name, err)
	}
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; i < 200; i++ {
		if resp, err := http.Get(endpoint); err == nil {
			resp.Body.Close()
			return endpoint, cmd.Process.Pid, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
		}
		time.Sleep(50 * time.Millisecond)
	}
	log.Fatalf("%s did not start", name)
	return "", 0, nil
}
