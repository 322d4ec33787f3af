package store

import (
	"context"
	"errors"
	"slices"
)

// Doomed is what deleting some experiments takes with it: an experiment
// that is a segment of a load takes every segment of the load, so no half
// of a load is left to be merged; a bisect, named by its ID or by any
// step's, takes its answer and every step.
type Doomed struct {
	Experiments []Member
	Bisects     []string
}

// Running is the first doomed experiment whose runner still lives, if any.
func (d Doomed) Running() (Member, bool) {
	for _, m := range d.Experiments {
		if m.Status == StatusRunning && m.Gone() == "" && m.Owner.PID != 0 {
			return m, true
		}
	}
	return Member{}, false
}

// Names are the doomed things as a person confirms them: each bisect,
// then each experiment with its segment.
func (d Doomed) Names() []string {
	var names []string
	for _, b := range d.Bisects {
		names = append(names, "bisect "+b+" (its answer)")
	}
	for _, m := range d.Experiments {
		name := m.ID
		if m.Segment != "" {
			name += " (segment " + m.Segment + ")"
		}
		names = append(names, name)
	}
	return names
}

// Doom resolves experiments and bisects named by ID (or unique prefix),
// and each group to all its members, before anything is deleted.
func (s *Store) Doom(ctx context.Context, ids []string) (Doomed, error) {
	r := doomer{s: s}
	var err error
	if r.all, err = s.ListExperiments(ctx); err != nil {
		return Doomed{}, err
	}
	for _, id := range ids {
		if err := r.doom(ctx, id); err != nil {
			return Doomed{}, err
		}
	}
	return r.d, nil
}

// doomer gathers what Doom resolves.
type doomer struct {
	s     *Store
	d     Doomed
	all   []Experiment
	loose []Member // the experiments of no load in segments, a bisect's steps among them
}

func (r *doomer) doom(ctx context.Context, id string) error {
	e, err := r.s.Find(ctx, id)
	if errors.Is(err, ErrNoExperiment) {
		if _, berr := r.s.Bisect(ctx, id); berr == nil {
			return r.bisect(ctx, id)
		}
	}
	if err != nil {
		return err
	}
	if b := e.BisectID(); b != "" {
		return r.bisect(ctx, b)
	}
	members, err := r.s.Members(ctx, e.SegmentGroup) // "" lists the experiments of no group
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.ID == e.ID || e.SegmentGroup != "" {
			r.add(m)
		}
	}
	return nil
}

func (r *doomer) add(m Member) {
	if !slices.ContainsFunc(r.d.Experiments, func(d Member) bool { return d.ID == m.ID }) {
		r.d.Experiments = append(r.d.Experiments, m)
	}
}

// bisect dooms a bisect's answer and every step.
func (r *doomer) bisect(ctx context.Context, b string) error {
	if slices.Contains(r.d.Bisects, b) {
		return nil
	}
	r.d.Bisects = append(r.d.Bisects, b)
	if r.loose == nil {
		var err error
		if r.loose, err = r.s.Members(ctx, ""); err != nil {
			return err
		}
	}
	for _, e := range r.all {
		if e.BisectID() != b {
			continue
		}
		if i := slices.IndexFunc(r.loose, func(m Member) bool { return m.ID == e.ID }); i >= 0 {
			r.add(r.loose[i])
		}
	}
	return nil
}

// Delete deletes what Doom resolved, calling done after each experiment
// and each bisect is gone. It goes on when ctx is cancelled: a deletion
// half made is no better than one not begun.
func (s *Store) Delete(ctx context.Context, d Doomed, done func(what string)) error {
	ctx = context.WithoutCancel(ctx)
	for _, m := range d.Experiments {
		if err := s.DeleteExperiment(ctx, m.ID); err != nil {
			return err
		}
		done(m.ID)
	}
	for _, b := range d.Bisects {
		if err := s.DeleteBisect(ctx, b); err != nil && !errors.Is(err, ErrNoBisect) {
			return err
		}
		done("bisect " + b)
	}
	return nil
}
