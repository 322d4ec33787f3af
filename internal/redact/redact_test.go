package redact

import (
	"bytes"
	"fmt"
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
