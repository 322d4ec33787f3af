package cli

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/store"
)

// openStore opens --db, turning a foreign or newer file into a usage error.
func openStore(ctx context.Context, path string) (*store.Store, error) {
	s, err := store.Open(ctx, path)
	if errors.Is(err, store.ErrNotIolab) || errors.Is(err, store.ErrNoDirectory) {
		return nil, &UsageError{Err: err}
	}
	return s, err
}

// noteOn stores --note with a new experiment.
func noteOn(ctx context.Context, st *store.Store, id, note string) error {
	if id == "" || strings.TrimSpace(note) == "" {
		return nil
	}
	return st.AddNote(context.WithoutCancel(ctx), id, note)
}

// DefaultDB is the database of every command when neither --db nor
// IOLAB_DB says otherwise.
const DefaultDB = "./iolab.db"

// defaultDB is $IOLAB_DB, else DefaultDB.
func defaultDB() string {
	if env := os.Getenv("IOLAB_DB"); env != "" {
		return env
	}
	return DefaultDB
}

// dbFlag registers --db, whose default is defaultDB.
func dbFlag(f *pflag.FlagSet, p *string) {
	*p = defaultDB()
	redact.URL(*p)
	f.Var(flagval.URL{P: p}, "db", "where every run is stored: a SQLite file, or a PostgreSQL database as postgres://user@host:port/db "+
		"(password from PGPASSWORD or ~/.pgpass; never stored or shown) (default $IOLAB_DB when set, else "+DefaultDB+")")
	f.Lookup("db").DefValue = "" // said once, above: pflag would add the value it found
}

// showCommand is the command that prints an experiment again: with --db when
// the database is not the one a plain `iolab show` would open.
func showCommand(id, db string) string {
	cmd := strings.TrimSpace("iolab show " + id)
	if db == defaultDB() {
		return cmd
	}
	return cmd + " --db " + shellQuote(redact.URL(db))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// openExisting opens --db for reading commands, which must not create it.
func openExisting(ctx context.Context, path string) (*store.Store, error) {
	if _, err := os.Stat(path); err != nil && !store.IsPostgres(path) {
		return nil, usage("--db %s: no such database; run an experiment first or point --db at one", path)
	}
	st, err := openStore(ctx, path)
	if err != nil {
		return nil, err
	}
	// What a dead runner left is not shown as running for ever (best
	// effort: a store this user may only read is read as it is).
	_, _ = st.MarkDied(ctx)
	return st, nil
}
