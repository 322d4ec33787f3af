// Package outtail keeps the end of what a child process prints, so an error
// can quote it on one line (a build that failed, a server that never got
// ready, a command that exited non-zero).
package outtail

import (
	"strings"
	"sync"
)

// Tail keeps the last Max bytes written to it; safe for concurrent writers
// (a process's stdout and stderr).
type Tail struct {
	Max int
	mu  sync.Mutex
	buf []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.Max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.Max:]...)
	}
	return len(p), nil
}

// String is OneLine of what was kept.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return OneLine(t.buf)
}

// OneLine is the last 300 bytes of out with its whitespace folded, or
// "(no output)".
func OneLine(out []byte) string {
	s := strings.TrimSpace(string(out))
	if len(s) > 300 {
		s = "..." + s[len(s)-300:]
	}
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "(no output)"
	}
	return s
}
