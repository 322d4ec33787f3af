package redact

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestURLAndString(t *testing.T) {
	got := URL("http://user:pw-xyz-123@127.0.0.1:9000/b?x=1")
	if want := "http://user:***@127.0.0.1:9000/b?x=1"; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
	for _, s := range []string{"http://127.0.0.1/x", "not a url", "http://user@host/"} {
		if got := URL(s); got != s {
			t.Errorf("URL(%q) = %q", s, got)
		}
	}
	// The password is now a registered secret, also where it is not a URL.
	if got := String("error: pw-xyz-123 rejected"); got != "error: *** rejected" {
		t.Errorf("String = %q", got)
	}
	Secret("abc") // too short to scrub from free text
	if got := String("abcdef"); got != "abcdef" {
		t.Errorf("a 3-character secret was scrubbed from %q", got)
	}
	// The longer of two overlapping secrets wins.
	Secret("tok-1234", "tok-1234-longer")
	if got := String("x tok-1234-longer y"); got != "x *** y" {
		t.Errorf("String = %q", got)
	}
	var buf bytes.Buffer
	fmt.Fprintf(Writer(&buf), "Authorization: Bearer %s\n", "tok-1234")
	if buf.String() != "Authorization: Bearer ***\n" {
		t.Errorf("Writer wrote %q", buf.String())
	}
}

func TestIsSecretName(t *testing.T) {
	for _, name := range []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "X-Auth-Token",
		"AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "bearer", "basic", "login-body", "secret-key"} {
		if !IsSecretName(name) {
			t.Errorf("%s is not taken for a secret", name)
		}
	}
	for _, name := range []string{"Content-Type", "Accept", "X-Request-Id", "url", "size", "concurrency"} {
		if IsSecretName(name) {
			t.Errorf("%s is taken for a secret", name)
		}
	}
	if !IsSecretName("X-Tenant", "x-tenant") {
		t.Error("a name listed with --secret-header is not a secret")
	}
}

// A URL's secret query values are masked where they stand — templates and
// other parameters as written — and registered; an HTTP client's error
// quoting the URL is masked the same way.
func TestURLQuery(t *testing.T) {
	in := "http://127.0.0.1:9/obj/{{i}}?X-Amz-Credential=AKID%2F2026&X-Amz-Signature=sig-0a1b2c3d&part={{i}}&api_key=k9#frag"
	want := "http://127.0.0.1:9/obj/{{i}}?X-Amz-Credential=***&X-Amz-Signature=***&part={{i}}&api_key=***#frag"
	if got := URL(in); got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
	if got := String("GET sig-0a1b2c3d and AKID/2026"); got != "GET *** and ***" {
		t.Errorf("the query's secrets are not registered: %q", got)
	}
	// Credentials of every shape a storage URL carries: Azure SAS,
	// Google's signed URL, CloudFront's signed URL.
	for _, q := range []string{"sv=2024-01-01&se=2026-12-01&sp=r&sig=AzSig%2Fabc123xyz", "X-Goog-Credential=gc%2F2026&X-Goog-Signature=gsig0a1b2c",
		"Policy=eyJwb2xpY3kiOnt9fQ__&Signature=cfsig0a1b2c&Key-Pair-Id=APKA0123456"} {
		got := URL("https://127.0.0.1/o?" + q)
		for _, p := range strings.Split(q, "&") {
			k, v, _ := strings.Cut(p, "=")
			masked := !strings.HasPrefix(k, "s") || k == "sig" // sv, se, sp are no secrets
			if strings.Contains(got, v) == masked {
				t.Errorf("%s: %s masked %v, want %v: %s", q, k, !strings.Contains(got, v), masked, got)
			}
		}
	}
	if got := URL("http://127.0.0.1/x?part=1&size=2"); got != "http://127.0.0.1/x?part=1&size=2" {
		t.Errorf("a query without secrets changed: %q", got)
	}
	err := fmt.Errorf("upload: %w", Err(&url.Error{Op: "Get", URL: "http://127.0.0.1:9/x?token=tk-555-abc", Err: errors.New("connection refused")}))
	if msg := err.Error(); msg != `upload: Get "http://127.0.0.1:9/x?token=***": connection refused` {
		t.Errorf("Err = %q", msg)
	}
}
