package s3

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/iolab/iolab/internal/metrics"
)

// An answer's body decides what an error says: an S3 error keeps its code
// and message; anything else is its status and first line, HEAD aside
// (it has no body); 404/405/501 without an S3 error ask whether the server
// supports the operation.
func TestErrorsSayWhatTheServerSaid(t *testing.T) {
	t.Parallel()
	s3err := []byte(`<?xml version="1.0"?><Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>`)
	for _, tc := range []struct {
		method string
		status int
		body   string
		code   string
		msg    string
	}{
		{"GET", 503, string(s3err), "SlowDown", "get: HTTP 503 SlowDown: Reduce your request rate."},
		{"GET", 404, "<html><body>nope</body></html>\nmore", "404", `get: HTTP 404, no S3 error in the answer; the body begins "<html><body>nope</body></html>" (35 bytes); get not supported by this server?`},
		{"POST", 501, "", "501", "get: HTTP 501, no S3 error in the answer (empty body); get not supported by this server?"},
		{"GET", 500, "internal", "500", `get: HTTP 500, no S3 error in the answer; the body begins "internal" (8 bytes)`},
		{"HEAD", 404, "", "NoSuchKey", "get: HTTP 404 NoSuchKey: The specified key does not exist."},
		{"HEAD", 403, "", "AccessDenied", "get: HTTP 403 AccessDenied: Access Denied."},
		{"HEAD", 500, "", "500", "get: HTTP 500: a HEAD answer has no body to say more"},
	} {
		err := errorResponse(tc.method, tc.status, []byte(tc.body))
		if got := errorCode(err); got != tc.code {
			t.Errorf("%s %d %q: code %s, want %s", tc.method, tc.status, tc.body, got, tc.code)
		}
		if got := explain(metrics.Get, err).Error(); got != tc.msg {
			t.Errorf("%s %d %q:\n got %s\nwant %s", tc.method, tc.status, tc.body, got, tc.msg)
		}
		var resp minio.ErrorResponse
		if !errors.As(explain(metrics.Get, err), &resp) || resp.StatusCode != tc.status {
			t.Errorf("the explained error does not wrap the response")
		}
	}
	ok := minio.ErrorResponse{StatusCode: http.StatusOK, Code: "200 OK", Message: "200 OK"}
	if errorCode(ok) != "malformed-response" || !strings.Contains(explain(metrics.Copy, ok).Error(), "copy: HTTP 200, but not the answer S3 gives: a malformed success (200 OK); copy not supported by this server?") {
		t.Errorf("2xx error: %s, %v", errorCode(ok), explain(metrics.Copy, ok))
	}
}

func TestKeyLayouts(t *testing.T) {
	t.Parallel()
	for layout, want := range map[string]string{"": "p/42/pool-1", "prefix": "p/42/pool-1", "flat": "p-42-pool-1", "sep:_": "p_42_pool-1",
		"{prefix}.{stamp}.{name}": "p.42.pool-1", "x{stamp}{name}": "x42pool-1"} {
		l, err := ParseKeyLayout(layout)
		if err != nil || l.Key("p", 42, "pool-1") != want {
			t.Errorf("%q: %q %v, want %q", layout, l.Key("p", 42, "pool-1"), err, want)
		}
	}
	for _, bad := range []string{"sep:", "{name}-{stamp}", "{prefix}/{name}", "tree"} {
		if _, err := ParseKeyLayout(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
