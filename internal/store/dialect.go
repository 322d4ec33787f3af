package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strconv"
	"strings"
)

// The store speaks to SQLite (the default, a file) and PostgreSQL (a
// server: teams, shared history, load from many hosts) through one set of
// queries and one schema. Queries are written with ? placeholders, bound as
// $1, $2, ... for PostgreSQL; the schema is written for SQLite and its few
// SQLite words are translated (pgDDL); new rows' IDs come back with
// RETURNING id, which both have.

// sqlDB is the database with its dialect.
type sqlDB struct {
	*sql.DB
	pg bool
	// prepared are the statements every run makes, prepared once: SQLite
	// parsed and planned each every time, most of the CPU of storing a
	// short run. Written by prepare only, before any use.
	prepared map[string]*sql.Stmt
}

// sqlTx is a transaction with its dialect.
type sqlTx struct {
	*sql.Tx
	pg bool
	db *sqlDB
}

// prepare prepares the statements every run makes (runs.go), once the
// schema is there. A statement that cannot be prepared is run as it is.
func (d *sqlDB) prepare(ctx context.Context) {
	d.prepared = map[string]*sql.Stmt{}
	for _, q := range []string{insertRunReturningID, updateRun, heartbeat} {
		if st, err := d.DB.PrepareContext(ctx, bind(q, d.pg)); err == nil {
			d.prepared[q] = st
		}
	}
}

// stmt is q prepared for the transaction, or nil.
func (t *sqlTx) stmt(ctx context.Context, q string) *sql.Stmt {
	if t.db == nil || t.db.prepared[q] == nil {
		return nil
	}
	return t.Tx.StmtContext(ctx, t.db.prepared[q])
}

func (d *sqlDB) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return d.DB.ExecContext(ctx, bind(q, d.pg), args...)
}

func (d *sqlDB) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return d.DB.QueryContext(ctx, bind(q, d.pg), args...)
}

func (d *sqlDB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return d.DB.QueryRowContext(ctx, bind(q, d.pg), args...)
}

func (d *sqlDB) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sqlTx, error) {
	tx, err := d.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &sqlTx{Tx: tx, pg: d.pg, db: d}, nil
}

// durability is whether a commit waits until it is on disk.
type durability bool

const (
	// synced: a result, which must survive the machine.
	synced durability = true
	// unsynced: a record that serves a process that dies (a run begun,
	// the process groups running), which the system's cache survives,
	// and not a machine that does, after which nothing of the run is left
	// to find. The log is written in order: the next synced commit (a
	// run's result) makes it durable too. Two of a run's three commits
	// are these; each that waited for the disk cost an fsync between runs
	// (docs/cmd.md).
	unsynced durability = false
)

// begin begins a transaction committed as sync says: SQLite on a
// connection set to synchronous=NORMAL for it (a commit writes the log
// without syncing it), PostgreSQL with synchronous_commit off for it.
// done, after the commit or rollback, returns the connection as it was.
func (d *sqlDB) begin(ctx context.Context, sync durability) (*sqlTx, func(), error) {
	if sync == synced {
		tx, err := d.BeginTx(ctx, nil)
		return tx, func() {}, err
	}
	if d.pg {
		tx, err := d.BeginTx(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		if _, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			tx.Rollback()
			return nil, nil, err
		}
		return tx, func() {}, nil
	}
	conn, err := d.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	restore := func() {
		// A connection that cannot be set back is never used again: a
		// result must not be committed on it unsynced.
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = FULL`); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		restore()
		return nil, nil, err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		restore()
		return nil, nil, err
	}
	return &sqlTx{Tx: tx, db: d}, restore, nil
}

func (t *sqlTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, bind(q, t.pg), args...)
}

func (t *sqlTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, bind(q, t.pg), args...)
}

func (t *sqlTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, bind(q, t.pg), args...)
}

// rowQuerier is a database or a transaction.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// insertID runs an INSERT and returns the new row's id.
func insertID(ctx context.Context, db rowQuerier, q string, args ...any) (int64, error) {
	var id int64
	err := db.QueryRowContext(ctx, q+" RETURNING id", args...).Scan(&id)
	return id, err
}

// bind turns ? placeholders (outside quoted text) into PostgreSQL's $n.
func bind(q string, pg bool) string {
	if !pg || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n, quote := 0, byte(0)
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// pgDDL is SQLite DDL in PostgreSQL's words: row IDs are BIGSERIAL (and the
// columns that refer to them BIGINT), blobs BYTEA.
func pgDDL(ddl string) string {
	return strings.NewReplacer("INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY", "INTEGER NOT NULL REFERENCES", "BIGINT NOT NULL REFERENCES",
		"BLOB", "BYTEA").Replace(ddl)
}
