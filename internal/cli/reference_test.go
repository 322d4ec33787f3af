package cli

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// docs/reference.md is what the built iolab says of itself (iolab
// reference): a flag or plan key added, renamed or dropped fails here until
// the file is made again.
func TestReferenceIsCurrent(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(buildIolab(t), "reference").Output()
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("../../docs/reference.md")
	if err != nil || !bytes.Equal(have, out) {
		t.Fatalf("docs/reference.md is out of date (%v): go run ./cmd/iolab reference > docs/reference.md", err)
	}
}
