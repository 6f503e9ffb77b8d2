package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// EnvDataDir names the environment variable that overrides the data
// directory.
const EnvDataDir = "CODERUN_DATA_DIR"

// FileName is the database's file name inside the data directory.
const FileName = "coderun.db"

// ErrNotFound is returned for a run, step or review item that does not exist.
var ErrNotFound = errors.New("not found")

// DefaultDir returns the data directory: $CODERUN_DATA_DIR if set, else
// $XDG_DATA_HOME/coderun, else $HOME/.local/share/coderun. getenv is
// os.Getenv, or a map in tests.
func DefaultDir(getenv func(string) string) (string, error) {
	if d := getenv(EnvDataDir); d != "" {
		return d, nil
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "coderun"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", fmt.Errorf("store: no data directory: set %s, XDG_DATA_HOME or HOME", EnvDataDir)
	}
	return filepath.Join(home, ".local", "share", "coderun"), nil
}

// Store is a database of agent runs. It is safe for concurrent use, also by
// several processes sharing the data directory (SQLite in WAL mode, with a
// busy timeout).
type Store struct {
	db   *sql.DB
	path string
	now  func() time.Time
}

// Open opens (creating if needed) the store in dir.
func Open(ctx context.Context, dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: create data directory: %w", err)
	}
	return OpenFile(ctx, filepath.Join(dir, FileName))
}

// OpenFile opens (creating if needed) the store in the database file path.
func OpenFile(ctx context.Context, path string) (*Store, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &Store{db: db, path: path, now: time.Now}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return s, nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// schemaVersion is the version migrate brings the database to.
const schemaVersion = 1

const schema = `
CREATE TABLE IF NOT EXISTS runs (
	id          TEXT PRIMARY KEY,
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
	steps       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created_at);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
CREATE TABLE IF NOT EXISTS steps (
	run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	seq     INTEGER NOT NULL,
	at      TEXT NOT NULL,
	kind    TEXT NOT NULL,
	attempt INTEGER NOT NULL DEFAULT 0,
	summary TEXT NOT NULL DEFAULT '',
	data    TEXT NOT NULL,
	PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS files (
	run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	role        TEXT NOT NULL,
	path        TEXT NOT NULL,
	kind        TEXT NOT NULL,
	size        INTEGER NOT NULL,
	mode        INTEGER NOT NULL,
	link_target TEXT NOT NULL DEFAULT '',
	content     BLOB,
	truncated   INTEGER NOT NULL DEFAULT 0,
	step        INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (run_id, role, path)
);
CREATE TABLE IF NOT EXISTS reviews (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	kind       TEXT NOT NULL,
	reason     TEXT NOT NULL,
	created_at TEXT NOT NULL,
	status     TEXT NOT NULL,
	closed_at  TEXT NOT NULL DEFAULT '',
	resolution TEXT NOT NULL DEFAULT '',
	note       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS reviews_open ON reviews(status, created_at);
`

func (s *Store) migrate(ctx context.Context) error {
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > schemaVersion {
		return fmt.Errorf("the database has schema version %d, newer than this coderun's %d", v, schemaVersion)
	}
	if v == schemaVersion {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return tx.Commit()
}

// timeFormat is how times are stored: sortable text, UTC.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeFormat)
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		t, _ = time.Parse(time.RFC3339Nano, s)
	}
	return t
}
