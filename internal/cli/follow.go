package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/store"
)

// followEvery is how often --follow reads the store and draws the load.
const followEvery = time.Second

// runFollow draws a load run in segments as it runs, from the store alone:
// every second, the load's operations/s, MiB/s, p99 and errors — the sum
// of each segment's latest stored second, the worst segment's p99 — and
// each segment's, until every segment has ended. On a terminal the view
// is redrawn in place; otherwise each second's view is printed after the
// last. arg is a segment group, or an experiment of one (default: the
// newest load in segments).
func runFollow(ctx context.Context, st *store.Store, arg string, stdout io.Writer) error {
	grp, err := st.FollowedGroup(ctx, arg)
	if err != nil {
		return err
	}
	f, isFile := stdout.(*os.File)
	redraw := isFile && term.IsTerminal(int(f.Fd()))
	drawn := 0
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	for {
		segs, err := st.LiveLoad(ctx, grp)
		if err != nil {
			return err
		}
		if len(segs) == 0 {
			return fmt.Errorf("show --follow: segment group %s holds no experiment any more (deleted?)", grp)
		}
		view, running := report.Follow(grp, segs, time.Now())
		if redraw && drawn > 0 {
			fmt.Fprintf(stdout, "\x1b[%dA\x1b[J", drawn) // up over the last view, clear to the end
		}
		if _, err := io.WriteString(stdout, view); err != nil {
			return err
		}
		drawn = strings.Count(view, "\n")
		if !redraw {
			fmt.Fprintln(stdout)
		}
		if !running {
			fmt.Fprintf(stdout, "every segment has ended; `%s` prints the merged load\n", showCommand(segs[0].ID, st.Path()))
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
}
