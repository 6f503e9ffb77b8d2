package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/coderun/coderun/store"
)

// EnvDataDir names the environment variable that overrides the data
// directory.
const EnvDataDir = "CODERUN_DATA_DIR"

// FileName is the database's file name inside the data directory.
const FileName = "coderun.db"

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

// Options configure a [DB].
type Options struct {
	// Lease is how long an owner holds a run without renewing;
	// 0 means store.DefaultLease.
	Lease time.Duration
}

// DB is a store of agent runs in one SQLite file. It is safe for
// concurrent use, also by several processes sharing the file (WAL mode,
// immediate transactions, a busy timeout).
type DB struct {
	db    *sql.DB
	path  string
	lease time.Duration
	now   func() time.Time
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) the store in the data directory dir.
func Open(ctx context.Context, dir string, opts Options) (*DB, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: create data directory: %w", err)
	}
	return OpenFile(ctx, filepath.Join(dir, FileName), opts)
}

// OpenFile opens (creating if needed) the store in the database file path,
// migrating an older schema.
func OpenFile(ctx context.Context, path string, opts Options) (*DB, error) {
	if opts.Lease < 0 {
		return nil, fmt.Errorf("store: negative lease %s", opts.Lease)
	}
	if opts.Lease == 0 {
		opts.Lease = store.DefaultLease
	}
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", path, err)
	}
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
	s := &DB{db: db, path: path, lease: opts.Lease, now: time.Now}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return s, nil
}

// createPrivate creates the database file at path, empty and readable by
// the user only, unless it exists: it holds the users' inputs and prompts.
// SQLite creates the journal files beside it with the same permissions.
func createPrivate(path string) error {
	if path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// Path is the database file.
func (s *DB) Path() string { return s.path }

// Lease is how long an owner holds a run without renewing.
func (s *DB) Lease() time.Duration { return s.lease }

// Close closes the database.
func (s *DB) Close() error { return s.db.Close() }

// Tenant returns the store bound to one tenant's records.
func (s *DB) Tenant(name string) (store.Tenant, error) {
	if err := store.ValidTenant(name); err != nil {
		return nil, err
	}
	return &tenant{DB: s, name: name}, nil
}

// tx runs f in a transaction (BEGIN IMMEDIATE: writers queue up at the
// start instead of failing half-way).
func (s *DB) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// timeFormat is how times are stored: sortable text of a fixed width, UTC.
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
