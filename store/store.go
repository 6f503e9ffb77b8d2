package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Store is a database of agent runs shared by tenants. Every record
// belongs to one tenant, and every read and write goes through the handle
// of one tenant ([Store.Tenant]), so no query can forget whose records it
// is about. Implementations (package store/sqlite, ...) pass the shared
// suite in package store/storetest.
type Store interface {
	// Tenant returns the store bound to one tenant's records, or an error
	// for a name that is not a valid tenant name ([ValidTenant]).
	Tenant(name string) (Tenant, error)
	// Close releases the store.
	Close() error
}

// DefaultTenant is the tenant of the CLI, and of the records of databases
// made before there were tenants.
const DefaultTenant = "default"

// ErrNotFound is returned for a run or review item that does not exist —
// or that belongs to another tenant.
var ErrNotFound = errors.New("not found")

// ErrNotOwner is returned when a process records into a run it does not
// own, or claims a run whose lease another process holds.
var ErrNotOwner = errors.New("the run is driven by another process")

// ErrEnded is returned when a run that has ended is claimed or recorded
// into.
var ErrEnded = errors.New("the run has already ended")

// Tenant is a store bound to one tenant: it creates, reads and changes
// that tenant's runs, steps, files and review items, and nothing else.
// A run of another tenant is [ErrNotFound] here.
//
// A run is driven by one owner at a time, by lease: [Tenant.CreateRun] and
// [Tenant.Claim] give the owner a lease for the store's lease duration,
// [Tenant.Renew] and every [Tenant.Record] extend it, and a run whose
// owner stopped renewing (it died, on this host or another) can be claimed
// once its lease has expired. [KeepAlive] renews a lease in the background.
type Tenant interface {
	// Name is the tenant's name.
	Name() string

	// CreateRun stores a new run, status running, owned by nr.Owner with a
	// fresh lease, together with its input files.
	CreateRun(ctx context.Context, nr NewRun) (*Run, error)
	// GetRun returns the run with the given id, or with the only id
	// starting with it (at least 4 characters).
	GetRun(ctx context.Context, id string) (*Run, error)
	// ListRuns returns the runs f selects, newest first.
	ListRuns(ctx context.Context, f Filter) ([]*Run, error)
	// DeleteRun removes a run with its steps, files and review items.
	DeleteRun(ctx context.Context, id string) error

	// Claim makes owner the run's owner with a fresh lease: when the run
	// has no owner, its owner's lease has expired, or owner already owns
	// it. It fails with [ErrNotOwner] while another owner's lease runs,
	// and with [ErrEnded] for a run that has ended.
	Claim(ctx context.Context, id string, owner Owner) (*Run, error)
	// Renew extends owner's lease on the run and returns when it now
	// expires; [ErrNotOwner] when owner no longer owns the run.
	Renew(ctx context.Context, id string, owner Owner) (time.Time, error)
	// Record applies u to the run in one transaction, if owner owns it
	// (and extends the lease unless u releases it), and returns the steps
	// as stored, with Seq and At.
	Record(ctx context.Context, id string, owner Owner, u Update) ([]Step, error)

	// Steps returns the run's steps in order; kinds, if given, keep only
	// those.
	Steps(ctx context.Context, runID string, kinds ...StepKind) ([]Step, error)
	// Files returns the run's files of a role (RoleInput, RoleOutput; ""
	// for both), in role and path order, with their contents.
	Files(ctx context.Context, runID, role string) ([]File, error)

	// Reviews lists review items, oldest first: the open ones, or all
	// with all set; runID, if not empty, keeps one run's.
	Reviews(ctx context.Context, runID string, all bool) ([]ReviewItem, error)
	// CloseReview closes one open review item by id.
	CloseReview(ctx context.Context, id int64, resolution, note string) error

	// JobRecords are the tenant's batch-eval jobs (job.go).
	JobRecords
}

// ValidTenant checks a tenant name: 1 to 64 letters, digits, '.', '_' or
// '-', starting with a letter or digit.
func ValidTenant(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("store: tenant name %q: want 1 to 64 characters", name)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')
		if !ok {
			return fmt.Errorf("store: tenant name %q: want letters, digits, '.', '_' or '-', starting with a letter or digit", name)
		}
	}
	return nil
}

// DefaultLease is how long an owner's lease on a run lasts without
// renewal, unless the store is configured otherwise; [KeepAlive] renews
// it every third of that.
const DefaultLease = 30 * time.Second
