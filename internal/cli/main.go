package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
)

// Main runs iolab as a process and returns its exit status. Ctrl-C or
// SIGTERM cancels what runs (what finished is kept; a second signal kills
// at once), and an interrupted run exits as a shell reports a process the
// signal ended: 130 for SIGINT, 143 for SIGTERM.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		got.Store(sig)
		signal.Stop(sigs) // the next one has its default effect: it kills
		cancel()
	}()
	err := Execute(ctx, args, stdout, stderr)
	signal.Stop(sigs)
	close(sigs)
	if err != nil {
		if msg := err.Error(); strings.HasPrefix(msg, "iolab ") {
			fmt.Fprintln(stderr, msg) // it names the command itself: not "iolab: iolab history: ..."
		} else {
			fmt.Fprintf(stderr, "iolab: %s\n", msg)
		}
	}
	code := ExitCode(err)
	if sig, ok := got.Load().(syscall.Signal); ok && code == 130 {
		code = 128 + int(sig)
	}
	return code
}
