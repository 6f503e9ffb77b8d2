package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// schemaVersion is the version migrate brings the database to (PRAGMA
// user_version):
//
//  1. runs, steps, files and reviews, owners checked by process id;
//  2. tenants (part of every key; version 1's records go to
//     store.DefaultTenant) and leases (runs.lease_until);
//  3. batch-eval jobs and their verdicts (jobs, job_verdicts).
const schemaVersion = 3

// jobTables are the tables version 3 adds.
const jobTables = `
CREATE TABLE jobs (
	tenant      TEXT NOT NULL,
	id          TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	finished_at TEXT NOT NULL DEFAULT '',
	status      TEXT NOT NULL,
	error       TEXT NOT NULL DEFAULT '',
	total       INTEGER NOT NULL,
	verdicts    INTEGER NOT NULL DEFAULT 0,
	spec        TEXT NOT NULL,
	owner       TEXT NOT NULL DEFAULT '',
	lease_until TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (tenant, id)
);
CREATE INDEX jobs_created ON jobs(tenant, created_at);
CREATE TABLE job_verdicts (
	tenant TEXT NOT NULL,
	job_id TEXT NOT NULL,
	seq    INTEGER NOT NULL,
	data   TEXT NOT NULL,
	PRIMARY KEY (tenant, job_id, seq),
	FOREIGN KEY (tenant, job_id) REFERENCES jobs(tenant, id) ON DELETE CASCADE
);
`

// schema is version 3, made from nothing.
const schema = runTables + jobTables

// runTables are version 2's tables.
const runTables = `
CREATE TABLE runs (
	tenant      TEXT NOT NULL,
	id          TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	updated_at  TEXT NOT NULL,
	finished_at TEXT NOT NULL DEFAULT '',
	task        TEXT NOT NULL,
	model       TEXT NOT NULL,
	mode        TEXT NOT NULL,
	status      TEXT NOT NULL,
	outcome     TEXT NOT NULL DEFAULT '',
	answer      TEXT NOT NULL DEFAULT '',
	failure     TEXT NOT NULL DEFAULT '',
	pending     TEXT NOT NULL DEFAULT '',
	scorecard   TEXT NOT NULL DEFAULT '{}',
	inputs      TEXT NOT NULL DEFAULT '[]',
	config      TEXT NOT NULL DEFAULT '{}',
	state       TEXT NOT NULL DEFAULT '',
	owner       TEXT NOT NULL DEFAULT '',
	lease_until TEXT NOT NULL DEFAULT '',
	steps       INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (tenant, id)
);
CREATE INDEX runs_created ON runs(tenant, created_at);
CREATE INDEX runs_status ON runs(tenant, status);
CREATE TABLE steps (
	tenant  TEXT NOT NULL,
	run_id  TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	at      TEXT NOT NULL,
	kind    TEXT NOT NULL,
	attempt INTEGER NOT NULL DEFAULT 0,
	summary TEXT NOT NULL DEFAULT '',
	data    TEXT NOT NULL,
	PRIMARY KEY (tenant, run_id, seq),
	FOREIGN KEY (tenant, run_id) REFERENCES runs(tenant, id) ON DELETE CASCADE
);
CREATE TABLE files (
	tenant      TEXT NOT NULL,
	run_id      TEXT NOT NULL,
	role        TEXT NOT NULL,
	path        TEXT NOT NULL,
	kind        TEXT NOT NULL,
	size        INTEGER NOT NULL,
	mode        INTEGER NOT NULL,
	link_target TEXT NOT NULL DEFAULT '',
	content     BLOB,
	truncated   INTEGER NOT NULL DEFAULT 0,
	step        INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (tenant, run_id, role, path),
	FOREIGN KEY (tenant, run_id) REFERENCES runs(tenant, id) ON DELETE CASCADE
);
CREATE TABLE reviews (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	tenant     TEXT NOT NULL,
	run_id     TEXT NOT NULL,
	kind       TEXT NOT NULL,
	reason     TEXT NOT NULL,
	created_at TEXT NOT NULL,
	status     TEXT NOT NULL,
	closed_at  TEXT NOT NULL DEFAULT '',
	resolution TEXT NOT NULL DEFAULT '',
	note       TEXT NOT NULL DEFAULT '',
	FOREIGN KEY (tenant, run_id) REFERENCES runs(tenant, id) ON DELETE CASCADE
);
CREATE INDEX reviews_open ON reviews(tenant, status, created_at);
`

// fromV1 moves version 1's tables aside, makes version 2's, copies the
// records into them under the default tenant, and drops the old tables
// (children first, so that nothing cascades). Owners of version 1 hold no
// lease: their running runs show as interrupted.
const fromV1 = `
ALTER TABLE reviews RENAME TO reviews_v1;
ALTER TABLE files RENAME TO files_v1;
ALTER TABLE steps RENAME TO steps_v1;
ALTER TABLE runs RENAME TO runs_v1;
DROP INDEX IF EXISTS runs_created;
DROP INDEX IF EXISTS runs_status;
DROP INDEX IF EXISTS reviews_open;
` + runTables + `
INSERT INTO runs (tenant, id, created_at, updated_at, finished_at, task, model, mode, status, outcome, answer,
	failure, pending, scorecard, inputs, config, state, owner, lease_until, steps)
	SELECT 'default', id, created_at, updated_at, finished_at, task, model, mode, status, outcome, answer,
	failure, pending, scorecard, inputs, config, state, owner, '', steps FROM runs_v1;
INSERT INTO steps (tenant, run_id, seq, at, kind, attempt, summary, data)
	SELECT 'default', run_id, seq, at, kind, attempt, summary, data FROM steps_v1;
INSERT INTO files (tenant, run_id, role, path, kind, size, mode, link_target, content, truncated, step)
	SELECT 'default', run_id, role, path, kind, size, mode, link_target, content, truncated, step FROM files_v1;
INSERT INTO reviews (id, tenant, run_id, kind, reason, created_at, status, closed_at, resolution, note)
	SELECT id, 'default', run_id, kind, reason, created_at, status, closed_at, resolution, note FROM reviews_v1;
DROP TABLE reviews_v1;
DROP TABLE files_v1;
DROP TABLE steps_v1;
DROP TABLE runs_v1;
` + jobTables

// migrations[v] brings a database of version v to schemaVersion.
var migrations = map[int]string{0: schema, 1: fromV1, 2: jobTables}

func (s *DB) migrate(ctx context.Context) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if v == schemaVersion {
			return nil
		}
		m, ok := migrations[v]
		if !ok {
			return fmt.Errorf("the database has schema version %d, which this coderun (version %d) cannot open", v, schemaVersion)
		}
		if _, err := tx.ExecContext(ctx, m); err != nil {
			return fmt.Errorf("migrate from schema version %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		return nil
	})
}
