package store

import (
	"context"
	"errors"

	"github.com/iolab/iolab/internal/badinput"
)

// FollowedGroup is the segment group show --follow's argument names: a
// group, an experiment of one, or (empty) the newest experiment of one.
func (st *Store) FollowedGroup(ctx context.Context, arg string) (string, error) {
	if arg != "" {
		if ms, err := st.Members(ctx, arg); err != nil || len(ms) > 0 {
			return arg, err
		}
		e, err := st.Find(ctx, arg)
		switch {
		case errors.Is(err, ErrNoExperiment):
			return "", badinput.Errorf("show --follow %s: no segment group or experiment of that name in %s; `iolab ls` lists them", arg, st.Path())
		case err != nil:
			return "", &badinput.Error{Err: err}
		case e.SegmentGroup == "":
			return "", badinput.Errorf("show --follow %s: experiment %s is no segment of a load; --follow follows a load run in segments (--segment I/N)", arg, e.ID)
		}
		return e.SegmentGroup, nil
	}
	list, err := st.ListExperiments(ctx)
	if err != nil {
		return "", err
	}
	for _, e := range list { // newest first
		if e.SegmentGroup != "" {
			return e.SegmentGroup, nil
		}
	}
	return "", badinput.Errorf("show --follow: %s holds no load run in segments yet; start one (--segment I/N --segment-group NAME), then follow it", st.Path())
}
