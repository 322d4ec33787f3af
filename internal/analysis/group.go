package analysis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/store"
)

// GroupStore is what reading a load's segments takes of the store.
type GroupStore interface {
	Members(ctx context.Context, group string) ([]store.Member, error)
	Load(ctx context.Context, id string) (*store.Data, error)
}

// LoadSegments loads every segment of the load data is a segment of and
// merges them, one segment at a time (analysis.Merger); a segment whose
// runner died is named, and the load called partial. A group that is not
// one load is said so, and data shown alone.
func LoadSegments(ctx context.Context, st GroupStore, data *store.Data) (*store.Data, *SegmentsView, error) {
	merged, view, err := MergeGroup(ctx, st, data.Experiment.SegmentGroup, data)
	if err != nil {
		var malformed *MalformedGroup
		if errors.As(err, &malformed) {
			// Not one load (stored by an iolab that did not check): this
			// segment is shown alone, and the group named as malformed.
			return data, &SegmentsView{Group: data.Experiment.SegmentGroup, Malformed: malformed.Error()}, nil
		}
		return nil, nil, err
	}
	return merged, view, nil
}

// MalformedGroup is a group whose experiments are not one load.
type MalformedGroup struct{ err error }

func (e *MalformedGroup) Error() string { return e.err.Error() }

// MergeGroup loads the latest experiment of each segment of group grp and
// merges them, holding one segment at a time; have, when one of them, is
// not loaded again.
func MergeGroup(ctx context.Context, st GroupStore, grp string, have *store.Data) (*store.Data, *SegmentsView, error) {
	members, err := st.Members(ctx, grp)
	if err != nil {
		return nil, nil, err
	}
	latest := map[string]store.Member{} // by segment; Members lists each segment's oldest first
	for _, m := range members {
		latest[m.Segment] = m
	}
	chosen := slices.SortedFunc(maps.Values(latest), func(a, b store.Member) int { return cmp.Compare(segment.Index(a.Segment), segment.Index(b.Segment)) })
	// The next segments load while one merges (the store's latency
	// overlaps the merge's CPU), loadAhead at most, so memory holds a few
	// segments, not the load.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type loaded struct {
		d   *store.Data
		err error
	}
	results := make([]chan loaded, len(chosen))
	for i := range results {
		results[i] = make(chan loaded, 1)
	}
	slots := make(chan struct{}, loadAhead)
	go func() {
		for i, m := range chosen {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				if have != nil && m.ID == have.Experiment.ID {
					results[i] <- loaded{d: have}
					return
				}
				d, err := st.Load(ctx, m.ID)
				results[i] <- loaded{d, err}
			}()
		}
	}()
	merger := NewMerger()
	for i := range chosen {
		l := <-results[i]
		<-slots
		if l.err != nil {
			return nil, nil, l.err
		}
		if err := merger.Add(l.d); err != nil {
			return nil, nil, &MalformedGroup{err}
		}
	}
	merged, view, err := merger.Done()
	if err != nil {
		return nil, nil, &MalformedGroup{err}
	}
	for _, m := range chosen {
		if m.Status != store.StatusRunning && m.Status != store.StatusDied {
			continue
		}
		if why := m.Gone(); why != "" {
			view.Died = append(view.Died, fmt.Sprintf("segment %s %s", m.Segment, why))
			merged.Experiment.Status = StatusPartial
		}
	}
	return merged, view, nil
}

// loadAhead is how many segments of a load are read at once while they
// are merged.
const loadAhead = 2
