package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// flaky is a store whose barrier fails as given, then answers.
type flaky struct {
	Results
	errs  []error
	calls int
}

func (f *flaky) Barrier(context.Context, string) ([]int, time.Time, error) {
	f.calls++
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, time.Time{}, err
	}
	return []int{0, 1}, time.Time{}, nil
}

// An outage is waited out; a refusal is not retried; an outage past the
// grace fails, saying so.
func TestPatientWaitsOutAnOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	down := []error{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, fmt.Errorf("--db x.db: %w", liteError(5))}
	f := &flaky{errs: down}
	if arrived, _, err := NewPatient(f, time.Minute).Barrier(ctx, "g"); err != nil || len(arrived) != 2 || f.calls != 5 {
		t.Fatalf("an outage of four calls: %v %v after %d calls", err, arrived, f.calls)
	}
	refused := &pgconn.PgError{Code: "42P01", Message: "relation does not exist"}
	f = &flaky{errs: []error{refused}}
	if _, _, err := NewPatient(f, time.Minute).Barrier(ctx, "g"); !errors.Is(err, refused) || f.calls != 1 {
		t.Fatalf("a refusal: %v after %d calls", err, f.calls)
	}
	f = &flaky{errs: make([]error, 100)}
	for i := range f.errs {
		f.errs[i] = syscall.ECONNRESET
	}
	if _, _, err := NewPatient(f, 600*time.Millisecond).Barrier(ctx, "g"); err == nil || !strings.Contains(err.Error(), "(--store-grace 600ms)") || f.calls < 2 {
		t.Fatalf("past the grace: %v after %d calls", err, f.calls)
	}
}

// liteError is an error as modernc.org/sqlite reports one: its code.
type liteError int

func (e liteError) Error() string { return fmt.Sprintf("database is locked (%d)", int(e)) }
func (e liteError) Code() int     { return int(e) }
