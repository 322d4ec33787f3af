package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Processes that start together on a new SQLite file — the segments of a
// load — each open it: every one gets the store, none "database is
// locked" (docs/distributed.md: a held file is waited for).
func TestConcurrentOpensOfANewFile(t *testing.T) {
	if path := os.Getenv("IOLAB_TEST_OPEN"); path != "" {
		s, err := Open(context.Background(), path)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		s.Close()
		os.Exit(0)
	}
	t.Parallel()
	for trial := range 3 {
		path := filepath.Join(t.TempDir(), "x.db")
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failed []string
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentOpensOfANewFile$")
				cmd.Env = append(os.Environ(), "IOLAB_TEST_OPEN="+path)
				if out, err := cmd.CombinedOutput(); err != nil {
					mu.Lock()
					failed = append(failed, strings.TrimSpace(string(out)))
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(failed) > 0 {
			t.Errorf("trial %d: %d of 32 processes could not open the new file: %s", trial, len(failed), failed[0])
		}
	}
}
