// Package redact keeps secrets — keys, tokens, passwords, cookies, login
// bodies — out of everything iolab writes: the database, reports, log
// lines and error messages.
//
// It works at two levels. Where a secret's place is known (a --secret-key
// flag, an Authorization header, a URL's password, a plan's bearer: key),
// the caller shows Mask instead of the value. And every secret iolab learns
// is registered here (Secret), so that text built later — an error that
// quotes a request, a server's reply that echoes a key — is scrubbed by
// String before it is stored or printed.
package redact

import (
	"errors"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Mask is what a secret is shown as.
const Mask = "***"

// minScrubLen is the shortest secret String replaces in free text: shorter
// ones would mangle ordinary words. Known places mask secrets of any length.
const minScrubLen = 4

// varRef is a whole reference to a variable, after a scheme word.
var varRef = regexp.MustCompile(`^([A-Za-z]+ )?\$\([A-Za-z_][A-Za-z0-9_]*\)$`)

var registry struct {
	mu      sync.RWMutex
	secrets []string // longest first, so a secret's prefix never wins
}

// Secret registers values as secrets for String; empty and short ones
// are ignored, and so is a reference to a variable — $(API_TOKEN), which
// Kubernetes replaces in a Job's args — which is no secret.
func Secret(values ...string) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for _, v := range values {
		if len(v) < minScrubLen || slices.Contains(registry.secrets, v) || varRef.MatchString(v) {
			continue
		}
		registry.secrets = append(registry.secrets, v)
	}
	slices.SortFunc(registry.secrets, func(a, b string) int { return len(b) - len(a) })
}

// IsVarRef says v is a reference to a variable, $(NAME), after a scheme
// word for headers ("Bearer $(NAME)"): what Kubernetes expands in a
// container's args as the pod starts.
func IsVarRef(v string) bool { return varRef.MatchString(v) }

// String replaces every registered secret in s with Mask.
func String(s string) string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	for _, v := range registry.secrets {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Mask)
		}
	}
	return s
}

// Writer scrubs every write to w with String. Each write is scrubbed on its
// own, so a secret must not be split across writes (fmt.Fprintf writes
// once).
func Writer(w io.Writer) io.Writer { return scrubWriter{w} }

type scrubWriter struct{ w io.Writer }

// Unwrap returns the writer underneath, to ask whether it is a terminal.
func (s scrubWriter) Unwrap() io.Writer { return s.w }

func (s scrubWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// secretWords mark a header, form field, environment variable or plan key
// whose value is a secret.
var secretWords = []string{"auth", "cookie", "token", "secret", "password", "passwd", "key", "session", "credential", "signature", "bearer", "basic", "login-body"}

// IsSecretName says whether a value named name (a header, a form field, an
// environment variable, a plan key) is a secret: Authorization, Cookie,
// X-Api-Key, AWS_SECRET_ACCESS_KEY, bearer ... and any name in extra
// (--secret-header), compared without case.
func IsSecretName(name string, extra ...string) bool {
	n := strings.ReplaceAll(strings.ToLower(name), "_", "-") // login_body as login-body
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	for _, e := range extra {
		if strings.EqualFold(strings.TrimSpace(e), name) {
			return true
		}
	}
	return false
}

// secretParams are query parameters that carry a credential under a name
// no secret word is part of: Azure's SAS signature (sig), CloudFront's
// signed Policy (beside its Signature and Key-Pair-Id, which the words
// catch), and the short names of tokens and passwords.
var secretParams = []string{"sig", "policy", "jwt", "hmac", "pwd", "pass", "otp", "ticket"}

// isSecretParam says whether a URL's query parameter holds a credential.
func isSecretParam(name string) bool {
	return IsSecretName(name) || slices.ContainsFunc(secretParams, func(p string) bool { return strings.EqualFold(p, name) })
}

// URL masks the password of a URL's user information
// (http://user:pw@host -> http://user:***@host) and the values of query
// parameters whose names say they are secrets (?token=, ?api_key=, a
// presigned URL's X-Amz-Signature and X-Amz-Credential, a SAS's sig), and registers
// them. Text that is not a URL is returned as it is.
func URL(s string) string {
	s = maskQuery(s)
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if pw, ok := u.User.Password(); ok {
		Secret(pw)
		u.User = url.UserPassword(u.User.Username(), Mask)
		return strings.Replace(u.String(), url.QueryEscape(Mask), Mask, 1)
	}
	return s
}

// maskQuery masks the values of s's secret query parameters, in place in
// the text (templates such as {{i}} elsewhere are left as written).
func maskQuery(s string) string {
	q := strings.IndexByte(s, '?')
	if q < 0 {
		return s
	}
	end := len(s)
	if h := strings.IndexByte(s[q:], '#'); h >= 0 {
		end = q + h
	}
	params := strings.Split(s[q+1:end], "&")
	changed := false
	for i, p := range params {
		k, v, ok := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if !ok || v == "" || v == Mask || err != nil || !isSecretParam(name) {
			continue
		}
		Secret(v, unescaped(v)) // a server may echo it
		params[i], changed = k+"="+Mask, true
	}
	if !changed {
		return s
	}
	return s[:q+1] + strings.Join(params, "&") + s[end:]
}

// URLSecrets are the secrets URL masks in s: its password and the values
// of its secret query parameters.
func URLSecrets(s string) []string {
	var out []string
	if q := strings.IndexByte(s, '?'); q >= 0 {
		query, _, _ := strings.Cut(s[q+1:], "#")
		for _, p := range strings.Split(query, "&") {
			k, v, ok := strings.Cut(p, "=")
			if name, err := url.QueryUnescape(k); ok && v != "" && err == nil && isSecretParam(name) {
				out = append(out, unescaped(v))
			}
		}
	}
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
	}
	return out
}

func unescaped(v string) string {
	if u, err := url.QueryUnescape(v); err == nil {
		return u
	}
	return v
}

// Err is err with the URL an HTTP client's error quotes (*url.Error)
// masked as URL masks it: a query's token is a secret wherever it is
// printed. Call it before wrapping err: a wrapping error's text is made
// when it is.
func Err(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = URL(ue.URL)
	}
	return err
}
