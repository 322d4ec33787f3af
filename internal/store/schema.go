package store

// SchemaVersion is the version of the schema below. Opening a database with
// a higher version is refused; a lower one is migrated by migrations.
const SchemaVersion = 18

// migrations[v] upgrades a database from version v to v+1.
var migrations = map[int]string{
	1: `ALTER TABLE cells ADD COLUMN variant TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN extra TEXT NOT NULL DEFAULT '{}';`,
	2: `ALTER TABLE runs ADD COLUMN error_codes TEXT NOT NULL DEFAULT '{}';
ALTER TABLE run_directions ADD COLUMN errors BIGINT NOT NULL DEFAULT 0;
ALTER TABLE run_directions ADD COLUMN ttfb_histogram TEXT NOT NULL DEFAULT '';`,
	3:  objectsTable,
	4:  framesTable,
	5:  leasesTable,
	6:  `ALTER TABLE run_directions ADD COLUMN active_s DOUBLE PRECISION NOT NULL DEFAULT 0;`,
	7:  serverSeriesTable,
	8:  profilesTable,
	9:  envSeriesTable,
	10: `ALTER TABLE experiments ADD COLUMN notes TEXT NOT NULL DEFAULT '[]';`,
	11: framesPosColumn,
	12: segmentsDDL,
	13: loadsDDL,
	14: `ALTER TABLE run_directions ADD COLUMN response_histogram TEXT NOT NULL DEFAULT '';`,
	15: bisectsTable,
	16: `ALTER TABLE run_directions ADD COLUMN start_lag_histogram TEXT NOT NULL DEFAULT '';`,
	17: verifiesTable,
}

// bisectsTable keeps each bisect's answer so far (its steps are
// experiments of their own), for show and report to read back.
const bisectsTable = `
CREATE TABLE bisects (
	id         TEXT PRIMARY KEY,
	answer     TEXT NOT NULL,      -- JSON, as iolab bisect --json prints it
	updated_at TEXT NOT NULL
);`

// loadsDDL records what makes each load run in segments one load (its
// fingerprint, which every segment must match), and indexes what is read
// per experiment and per group.
const loadsDDL = `
CREATE TABLE segment_loads (
	grp         TEXT PRIMARY KEY,   -- the load's group (--segment-group)
	n           INTEGER NOT NULL,   -- N of I/N
	fingerprint TEXT NOT NULL,      -- JSON: what every segment runs alike
	created_at  TEXT NOT NULL
);
CREATE INDEX env_snapshots_by_experiment ON env_snapshots (experiment_id);
CREATE INDEX experiments_by_group ON experiments (segment_grp);`

// segmentsDDL is what segments of one load need: the experiment's group
// and segment, and the start barrier they meet at.
const segmentsDDL = `ALTER TABLE experiments ADD COLUMN segment_grp TEXT NOT NULL DEFAULT '';
ALTER TABLE experiments ADD COLUMN segment TEXT NOT NULL DEFAULT '';
CREATE TABLE segment_barrier (
	grp     TEXT NOT NULL,      -- the load's group (--segment-group)
	segment INTEGER NOT NULL,   -- I of I/N
	host    TEXT NOT NULL,
	at      TEXT NOT NULL,      -- when it arrived
	PRIMARY KEY (grp, segment)
);`

// framesPosColumn is a frame's position in play order (reverse and random
// orders play frames out of their numbers); -1 in rows stored before it,
// where it was the frame's number.
const framesPosColumn = `ALTER TABLE frame_timings ADD COLUMN pos INTEGER NOT NULL DEFAULT -1;`

// envSeriesTable is the machine's seconds during each run.
const envSeriesTable = `
CREATE TABLE env_series (
	run_id       INTEGER NOT NULL REFERENCES runs(id),
	second       BIGINT NOT NULL,             -- Unix second
	cpu_stall    DOUBLE PRECISION NOT NULL,   -- share of the second some task waited for a CPU (PSI)
	memory_stall DOUBLE PRECISION NOT NULL,
	io_stall     DOUBLE PRECISION NOT NULL,
	load1        DOUBLE PRECISION NOT NULL,
	PRIMARY KEY (run_id, second)
);`

// profilesTable holds the profiles taken of a server during runs.
const profilesTable = `
CREATE TABLE profiles (
	run_id INTEGER NOT NULL REFERENCES runs(id),
	kind   TEXT NOT NULL,                -- go_pprof, perf
	data   BLOB NOT NULL,                -- gzipped pprof
	PRIMARY KEY (run_id, kind)
);`

// serverSeriesTable is the per-second series of the servers iolab watched.
const serverSeriesTable = `
CREATE TABLE server_series (
	run_id      INTEGER NOT NULL REFERENCES runs(id),
	second      INTEGER NOT NULL,
	rss_bytes   BIGINT NOT NULL,
	cpu_s       DOUBLE PRECISION NOT NULL,   -- used during the second
	read_bytes  BIGINT NOT NULL,             -- from storage, during the second
	write_bytes BIGINT NOT NULL,
	threads     INTEGER NOT NULL,
	fds         INTEGER NOT NULL,
	PRIMARY KEY (run_id, second)
);`

// leasesTable holds the runner of each running experiment (see lease.go).
const leasesTable = `
CREATE TABLE leases (
	experiment_id TEXT PRIMARY KEY REFERENCES experiments(id),
	owner         TEXT NOT NULL,          -- JSON {host, pid, start}
	heartbeat_at  TEXT NOT NULL,
	processes     TEXT NOT NULL           -- JSON [{pgid, start}]: process groups the owner runs
);`

// framesTable is the per-frame series of frame tests.
const framesTable = `
CREATE TABLE frame_timings (
	run_id   INTEGER NOT NULL REFERENCES runs(id),
	frame    INTEGER NOT NULL,
	thread   INTEGER NOT NULL,
	start_ns BIGINT NOT NULL,
	open_ns  BIGINT NOT NULL,
	io_ns    BIGINT NOT NULL,
	close_ns BIGINT NOT NULL,
	late_ns  BIGINT NOT NULL,
	dropped  INTEGER NOT NULL,
	PRIMARY KEY (run_id, frame)
);`

// objectsTable is the manifest of objects runs left in place, to verify them
// later.
const objectsTable = `
CREATE TABLE objects (
	experiment_id TEXT NOT NULL REFERENCES experiments(id),
	run_id        INTEGER NOT NULL REFERENCES runs(id),
	cell_id       INTEGER NOT NULL REFERENCES cells(id),
	object_key    TEXT NOT NULL,
	size          BIGINT NOT NULL,
	seed          BIGINT NOT NULL,          -- content: block k is generator block seed<<24|k
	content_seed  BIGINT NOT NULL,          -- the generator's seed
	PRIMARY KEY (experiment_id, cell_id, object_key)
);`

// appID marks a database as iolab's in its meta table.
const appID = "iolab"

// schema is the whole database layout, in SQL portable to PostgreSQL except
// for INTEGER PRIMARY KEY (BIGSERIAL there). Times are RFC 3339 text in UTC.
const schema = `
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE experiments (
	id          TEXT PRIMARY KEY,
	name        TEXT NOT NULL,
	command     TEXT NOT NULL,
	plan        TEXT NOT NULL,          -- JSON: what was asked, to show and resume
	created_at  TEXT NOT NULL,
	finished_at TEXT,
	status      TEXT NOT NULL,          -- running, done, interrupted, failed
	notes       TEXT NOT NULL DEFAULT '[]' -- JSON [{at, text}]: what the user said about it
);
CREATE TABLE cells (
	id            INTEGER PRIMARY KEY,
	experiment_id TEXT NOT NULL REFERENCES experiments(id),
	idx           INTEGER NOT NULL,
	name          TEXT NOT NULL,        -- workload and parameters, the same for every variant
	workload      TEXT NOT NULL,
	params        TEXT NOT NULL,        -- JSON object of parameter -> value
	variant       TEXT NOT NULL DEFAULT '',
	UNIQUE (experiment_id, idx)
);
CREATE TABLE runs (
	id                 INTEGER PRIMARY KEY,
	experiment_id      TEXT NOT NULL REFERENCES experiments(id),
	cell_id            INTEGER NOT NULL REFERENCES cells(id),
	round              INTEGER NOT NULL,   -- warm-up and measured rounds each count from 0
	slot               INTEGER NOT NULL,   -- position within the round
	warmup             INTEGER NOT NULL,
	status             TEXT NOT NULL,      -- ok, failed, interrupted
	started_at         TEXT NOT NULL,
	ended_at           TEXT NOT NULL,
	duration_ns        BIGINT NOT NULL,
	errors             BIGINT NOT NULL,
	error              TEXT NOT NULL,
	cpu_user_s         DOUBLE PRECISION NOT NULL,
	cpu_sys_s          DOUBLE PRECISION NOT NULL,
	timing_overhead_ns DOUBLE PRECISION NOT NULL,
	notes              TEXT NOT NULL,      -- JSON array of {code, message}
	extra              TEXT NOT NULL DEFAULT '{}', -- JSON: workload figures such as a command's wall_s
	error_codes        TEXT NOT NULL DEFAULT '{}'  -- JSON: failed operations by "op:code"
);
CREATE INDEX runs_by_experiment ON runs (experiment_id, cell_id);
CREATE TABLE run_directions (
	run_id         INTEGER NOT NULL REFERENCES runs(id),
	direction      TEXT NOT NULL,         -- the operation kind: read, write, sync, put, get, ...
	ops            BIGINT NOT NULL,
	bytes          BIGINT NOT NULL,
	histogram      TEXT NOT NULL,         -- latency, HdrHistogram V2 compressed, base64
	errors         BIGINT NOT NULL DEFAULT 0,
	ttfb_histogram TEXT NOT NULL DEFAULT '', -- time to first byte, same encoding; '' when none
	active_s       DOUBLE PRECISION NOT NULL DEFAULT 0, -- seconds its rates divide by; 0: the run's duration
	response_histogram TEXT NOT NULL DEFAULT '', -- from the intended start of a paced operation; '' when unpaced
	start_lag_histogram TEXT NOT NULL DEFAULT '', -- how late a paced operation started, from its intended start; '' when unpaced
	PRIMARY KEY (run_id, direction)
);
CREATE TABLE metrics (
	run_id INTEGER NOT NULL REFERENCES runs(id),
	name   TEXT NOT NULL,                 -- ops_per_s, read.lat_p99_ns, ...
	value  DOUBLE PRECISION NOT NULL,
	PRIMARY KEY (run_id, name)
);
CREATE TABLE series (
	run_id INTEGER NOT NULL REFERENCES runs(id),
	second INTEGER NOT NULL,
	ops    BIGINT NOT NULL,
	bytes  BIGINT NOT NULL,
	p50_ns BIGINT NOT NULL,
	p99_ns BIGINT NOT NULL,
	max_ns BIGINT NOT NULL,
	PRIMARY KEY (run_id, second)
);
CREATE TABLE env_snapshots (
	id            INTEGER PRIMARY KEY,
	experiment_id TEXT NOT NULL REFERENCES experiments(id),
	round         INTEGER NOT NULL,
	phase         TEXT NOT NULL,          -- before, after
	taken_at      TEXT NOT NULL,
	snapshot      TEXT NOT NULL           -- JSON
);
` + objectsTable + framesTable + framesPosColumn + leasesTable + serverSeriesTable + profilesTable + envSeriesTable + segmentsDDL + loadsDDL + bisectsTable + verifiesTable
