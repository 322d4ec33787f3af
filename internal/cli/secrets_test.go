package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestSecretsNeverStoredOrPrinted runs s3 and http workloads, from flags
// and from a plan, with distinct secret strings in every place a secret can
// be given — keys, basic and bearer credentials, secret headers, a login
// body, a URL's password, a variant's environment — against servers that
// echo what they receive into error messages and set session cookies and
// tokens. No secret may appear in the database file's bytes, in anything
// printed, or in ls, show --json and show --format md.
func TestSecretsNeverStoredOrPrinted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "secrets.db")
	secret := map[string]string{}
	for _, name := range []string{"access", "secretkey", "badsecret", "urlpass", "loginbody", "bearer", "basic",
		"apikey", "custom", "cookie", "token", "planbearer", "planheader", "planenv", "querysig", "querytoken", "querysas"} {
		b := make([]byte, 6)
		rand.Read(b)
		secret[name] = "sekrit-" + name + "-" + hex.EncodeToString(b)
	}
	var printed []string // everything iolab printed or returned
	run := func(args ...string) error {
		t.Helper()
		out, errOut, err := iolab(t, context.Background(), append(args, "--db", db)...)
		printed = append(printed, out, errOut)
		if err != nil {
			printed = append(printed, err.Error())
		}
		return err
	}

	// S3 with the keys on the command line: a good run, and one the server
	// rejects.
	endpoint := startVersitygwWithKeys(t, secret["access"], secret["secretkey"])
	s3Args := []string{"s3", "--endpoint", endpoint, "--bucket", "secretsbkt", "--create-bucket", "--access-key", secret["access"],
		"--mix", "put=1,get=1", "--size", "1k", "--concurrency", "2", "--runtime", "300ms", "--rounds", "1", "--warmup", "0"}
	if err := run(append(s3Args, "--secret-key", secret["secretkey"])...); err != nil {
		t.Fatalf("s3 run: %v", err)
	}
	if err := run(append(s3Args, "--secret-key", secret["badsecret"])...); err == nil {
		t.Fatal("s3 with a wrong secret key succeeded")
	}

	// HTTP against a server that logs in with cookies and tokens and echoes
	// every request header into its error replies.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/login" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: secret["cookie"], Path: "/"})
			fmt.Fprintf(w, `{"token":%q}`, secret["token"])
			return
		}
		var echo []string
		for k, vs := range r.Header {
			echo = append(echo, k+"="+strings.Join(vs, ","))
		}
		sort.Strings(echo)
		http.Error(w, "rejected "+r.URL.String()+" "+strings.Join(echo, " "), http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	withPass := strings.Replace(srv.URL, "http://", "http://user:"+secret["urlpass"]+"@", 1)
	httpArgs := []string{"http", "upload", "--url", withPass + "/echo/{{i}}", "--size", "1k", "--count", "2", "--rounds", "1", "--warmup", "0",
		"--login-url", srv.URL + "/login", "--login-body", `{"user":"u","secret":"` + secret["loginbody"] + `"}`,
		"-H", "X-Api-Key: " + secret["apikey"], "-H", "X-Custom: " + secret["custom"], "--secret-header", "X-Custom"}
	if err := run(append(httpArgs, "--basic", "u:"+secret["basic"])...); err == nil {
		t.Fatal("uploads the server refused succeeded")
	}
	if err := run(append(httpArgs, "--bearer", secret["bearer"], "--json")...); err == nil {
		t.Fatal("uploads the server refused succeeded")
	}
	if err := run(append(httpArgs, "--login-token", "token", "--format", "md")...); err == nil {
		t.Fatal("uploads the server refused succeeded")
	}

	// Tokens in a URL's query (a presigned URL's signature, an API token),
	// downloaded from the echoing server and from a port nobody listens on.
	for _, base := range []string{srv.URL, "http://127.0.0.1:" + fmt.Sprint(freeLoopbackPort(t))} {
		if err := run("http", "download", "--url", base+"/echo/{{i}}?X-Amz-Signature="+secret["querysig"]+"&access_token="+secret["querytoken"]+"&part=1&sig="+secret["querysas"],
			"--size", "1k", "--count", "2", "--rounds", "1", "--warmup", "0"); err == nil {
			t.Fatal("downloads the server refused succeeded")
		}
	}

	// The same from a plan, with a variant's environment.
	writeFiles(t, dir, map[string]string{"plan.yaml": fmt.Sprintf(`rounds: 1
warmup: 0
variants:
  - name: a
    env: {API_TOKEN: %s}
workloads:
  - name: up
    http:
      url: %s/echo/{{i}}
      bearer: %s
      header: "X-Api-Key: %s"
      count: 1
`, secret["planenv"], srv.URL, secret["planbearer"], secret["planheader"])})
	if err := run("experiment", filepath.Join(dir, "plan.yaml"), "--keep-going"); err == nil {
		t.Fatal("the plan's refused uploads succeeded")
	}
	if err := run("ls"); err != nil {
		t.Fatal(err)
	}
	out, _, err := iolab(t, context.Background(), "ls", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		id := strings.Fields(line)[0]
		for _, format := range [][]string{{"--json", "--series"}, {"--format", "md"}, {}} {
			if err := run(append([]string{"show", id}, format...)...); err != nil {
				t.Fatal(err)
			}
		}
	}

	stored, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(printed, "\n")
	for name, s := range secret {
		if strings.Contains(string(stored), s) {
			t.Errorf("secret %s is in the database file", name)
		}
		if strings.Contains(all, s) {
			t.Errorf("secret %s was printed:\n%s", name, context80(all, s))
		}
	}
	// What was asked is still recorded, masked.
	for _, want := range []string{"--secret-key=***", "--access-key=***", "--bearer=***", "--basic=***", "X-Api-Key: ***", "user:***@",
		"X-Amz-Signature=***&access_token=***&part=1&sig=***"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in what iolab showed of its experiments", want)
		}
	}
	for _, want := range []string{"bearer: '***'", "API_TOKEN: '***'", "X-Api-Key: ***"} {
		if !strings.Contains(string(stored), want) {
			t.Errorf("no %q in the stored plan", want)
		}
	}
}

// context80 shows where s occurs in text.
func context80(text, s string) string {
	i := strings.Index(text, s)
	return text[max(0, i-80):min(len(text), i+len(s)+80)]
}

// startVersitygwWithKeys starts a versitygw of the test's own whose root
// keys are the given ones.
func startVersitygwWithKeys(t *testing.T, access, secret string) string {
	bin := versitygwBin(t)
	port := freeLoopbackPort(t)
	data := t.TempDir()
	cmd := exec.Command(bin, "--port", fmt.Sprintf("127.0.0.1:%d", port), "posix", data)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+access, "ROOT_SECRET_KEY="+secret)
	if err := startDying(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(endpoint + "/"); err == nil {
			resp.Body.Close()
			return endpoint
		}
	}
	t.Fatalf("versitygw did not answer on %s", endpoint)
	return ""
}
