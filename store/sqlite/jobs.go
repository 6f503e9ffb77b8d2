package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coderun/coderun/store"
)

const jobColumns = "tenant, id, created_at, finished_at, status, error, total, verdicts, spec, owner, lease_until"

func scanJob(sc rowScanner) (*store.Job, error) {
	var j store.Job
	var created, finished, spec, lease string
	if err := sc.Scan(&j.Tenant, &j.ID, &created, &finished, &j.Status, &j.Error, &j.Total, &j.Verdicts, &spec, &j.Owner, &lease); err != nil {
		return nil, err
	}
	j.CreatedAt, j.FinishedAt, j.LeaseUntil = parseTime(created), parseTime(finished), parseTime(lease)
	if spec != "" {
		j.Spec = json.RawMessage(spec)
	}
	return &j, nil
}

func (t *tenant) CreateJob(ctx context.Context, nj store.NewJob) (*store.Job, error) {
	if nj.ID == "" {
		nj.ID = store.NewID()
	}
	if nj.Owner == "" {
		return nil, errors.New("store: create job: no owner")
	}
	if nj.Total < 0 {
		return nil, fmt.Errorf("store: create job: %d items", nj.Total)
	}
	spec := nj.Spec
	if len(spec) == 0 {
		spec = json.RawMessage("{}")
	}
	if !json.Valid(spec) {
		return nil, errors.New("store: create job: the spec is not JSON")
	}
	now := t.now()
	err := t.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO jobs (tenant, id, created_at, status, total, spec, owner, lease_until)
			VALUES (?,?,?,?,?,?,?,?)`, t.name, nj.ID, formatTime(now), store.JobRunning, nj.Total, string(spec),
			string(nj.Owner), formatTime(now.Add(t.lease)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: create job: %w", err)
	}
	return t.GetJob(ctx, nj.ID)
}

func (t *tenant) GetJob(ctx context.Context, id string) (*store.Job, error) {
	j, err := scanJob(t.db.QueryRowContext(ctx, "SELECT "+jobColumns+" FROM jobs WHERE tenant = ? AND id = ?", t.name, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: job %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: job %s: %w", id, err)
	}
	return j, nil
}

func (t *tenant) ListJobs(ctx context.Context) ([]*store.Job, error) {
	rows, err := t.db.QueryContext(ctx, "SELECT "+strings.Replace(jobColumns, "spec", "''", 1)+
		" FROM jobs WHERE tenant = ? ORDER BY created_at DESC, id DESC", t.name)
	if err != nil {
		return nil, fmt.Errorf("store: jobs: %w", err)
	}
	defer rows.Close()
	var out []*store.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("store: jobs: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: jobs: %w", err)
	}
	return out, nil
}

func (t *tenant) DeleteJob(ctx context.Context, id string) error {
	err := t.tx(ctx, func(tx *sql.Tx) error {
		j, err := t.jobIn(ctx, tx, id)
		if err != nil {
			return err
		}
		if j.ShownAt(t.now()) == store.JobRunning {
			return fmt.Errorf("job %s is running (%s holds it)", id, j.Owner)
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM jobs WHERE tenant = ? AND id = ?", t.name, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete job: %w", err)
	}
	return nil
}

// jobIn reads job id inside tx.
func (t *tenant) jobIn(ctx context.Context, tx *sql.Tx, id string) (*store.Job, error) {
	j, err := scanJob(tx.QueryRowContext(ctx, "SELECT "+jobColumns+" FROM jobs WHERE tenant = ? AND id = ?", t.name, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	return j, err
}

// ownedJob reads job id inside tx and checks that owner owns it and that
// it has not ended.
func (t *tenant) ownedJob(ctx context.Context, tx *sql.Tx, id string, owner store.Owner) (*store.Job, error) {
	j, err := t.jobIn(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if j.Status.Final() {
		return nil, fmt.Errorf("job %s: %w (%s)", id, store.ErrEnded, j.Status)
	}
	if owner == "" || j.Owner != owner {
		return nil, fmt.Errorf("job %s: %w", id, store.ErrNotOwner)
	}
	return j, nil
}

func (t *tenant) ClaimJob(ctx context.Context, id string, owner store.Owner) (*store.Job, error) {
	if owner == "" {
		return nil, errors.New("store: claim job: no owner")
	}
	var job *store.Job
	err := t.tx(ctx, func(tx *sql.Tx) error {
		j, err := t.jobIn(ctx, tx, id)
		if err != nil {
			return err
		}
		until, err := t.takeLease(ctx, tx, "jobs", "job", id, j.Status, j.Owner, j.LeaseUntil, owner)
		if err != nil {
			return err
		}
		j.Owner, j.LeaseUntil = owner, until
		job = j
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: claim job: %w", err)
	}
	return job, nil
}

func (t *tenant) RenewJob(ctx context.Context, id string, owner store.Owner) (time.Time, error) {
	var until time.Time
	err := t.tx(ctx, func(tx *sql.Tx) error {
		if _, err := t.ownedJob(ctx, tx, id, owner); err != nil {
			return err
		}
		until = t.now().Add(t.lease)
		_, err := tx.ExecContext(ctx, "UPDATE jobs SET lease_until = ? WHERE tenant = ? AND id = ?", formatTime(until), t.name, id)
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("store: renew job: %w", err)
	}
	return until, nil
}

func (t *tenant) AddVerdicts(ctx context.Context, id string, owner store.Owner, verdicts ...json.RawMessage) (int, error) {
	for i, v := range verdicts {
		if !json.Valid(v) {
			return 0, fmt.Errorf("store: add verdicts: verdict %d is not JSON", i)
		}
	}
	var n int
	err := t.tx(ctx, func(tx *sql.Tx) error {
		j, err := t.ownedJob(ctx, tx, id, owner)
		if err != nil {
			return err
		}
		n = j.Verdicts
		for _, v := range verdicts {
			n++
			if _, err := tx.ExecContext(ctx, "INSERT INTO job_verdicts (tenant, job_id, seq, data) VALUES (?,?,?,?)",
				t.name, id, n, string(v)); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, "UPDATE jobs SET verdicts = ?, lease_until = ? WHERE tenant = ? AND id = ?",
			n, formatTime(t.now().Add(t.lease)), t.name, id)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: add verdicts: %w", err)
	}
	return n, nil
}

func (t *tenant) EndJob(ctx context.Context, id string, owner store.Owner, status store.JobStatus, errText string) error {
	if !status.Final() {
		return fmt.Errorf("store: end job: %q is not a final status", status)
	}
	err := t.tx(ctx, func(tx *sql.Tx) error {
		if _, err := t.ownedJob(ctx, tx, id, owner); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, error = ?, finished_at = ?, owner = '', lease_until = ''
			WHERE tenant = ? AND id = ?`, status, errText, formatTime(t.now()), t.name, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: end job: %w", err)
	}
	return nil
}

func (t *tenant) ReleaseJob(ctx context.Context, id string, owner store.Owner) error {
	err := t.tx(ctx, func(tx *sql.Tx) error {
		if _, err := t.ownedJob(ctx, tx, id, owner); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "UPDATE jobs SET owner = '', lease_until = '' WHERE tenant = ? AND id = ?", t.name, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: release job: %w", err)
	}
	return nil
}

func (t *tenant) JobVerdicts(ctx context.Context, id string, after int) ([]json.RawMessage, error) {
	if _, err := t.GetJob(ctx, id); err != nil {
		return nil, err
	}
	rows, err := t.db.QueryContext(ctx, "SELECT data FROM job_verdicts WHERE tenant = ? AND job_id = ? AND seq > ? ORDER BY seq",
		t.name, id, max(after, 0))
	if err != nil {
		return nil, fmt.Errorf("store: job %s verdicts: %w", id, err)
	}
	defer rows.Close()
	out := []json.RawMessage{}
	for rows.Next() {
		var data string
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("store: job %s verdicts: %w", id, err)
		}
		out = append(out, json.RawMessage(data))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: job %s verdicts: %w", id, err)
	}
	return out, nil
}
