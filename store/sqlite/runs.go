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

// tenant is the DB bound to one tenant: every statement names it.
type tenant struct {
	*DB
	name string
}

func (t *tenant) Name() string { return t.name }

func (t *tenant) CreateRun(ctx context.Context, nr store.NewRun) (*store.Run, error) {
	if nr.ID == "" {
		nr.ID = store.NewID()
	}
	if nr.Inputs == nil {
		nr.Inputs = []store.InputFile{}
	}
	if nr.Owner == "" {
		return nil, errors.New("store: create run: no owner")
	}
	now := t.now()
	inputs, err := json.Marshal(nr.Inputs)
	if err != nil {
		return nil, fmt.Errorf("store: create run: %w", err)
	}
	cfg := nr.Config
	if len(cfg) == 0 {
		cfg = json.RawMessage("{}")
	}
	score, _ := json.Marshal(store.Scorecard{})
	err = t.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs (tenant, id, created_at, updated_at, task, model, mode, status,
			scorecard, inputs, config, state, owner, lease_until) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
			t.name, nr.ID, formatTime(now), formatTime(now), nr.Task, nr.Model, nr.Mode, store.StatusRunning,
			string(score), string(inputs), string(cfg), string(nr.State), string(nr.Owner), formatTime(now.Add(t.lease)))
		if err != nil {
			return err
		}
		for _, f := range nr.InputFiles {
			f.Role = store.RoleInput
			if err := t.putFile(ctx, tx, nr.ID, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: create run: %w", err)
	}
	return t.GetRun(ctx, nr.ID)
}

const runColumns = `tenant, id, created_at, updated_at, finished_at, task, model, mode, status, outcome, answer,
	failure, pending, scorecard, inputs, config, state, owner, lease_until, steps`

type rowScanner interface{ Scan(dest ...any) error }

func scanRun(sc rowScanner) (*store.Run, error) {
	var (
		r                                      store.Run
		created, updated, finished, lease      string
		failure, pending, score, inputs, state string
		cfg                                    string
	)
	if err := sc.Scan(&r.Tenant, &r.ID, &created, &updated, &finished, &r.Task, &r.Model, &r.Mode, &r.Status,
		&r.Outcome, &r.Answer, &failure, &pending, &score, &inputs, &cfg, &state, &r.Owner, &lease, &r.Steps); err != nil {
		return nil, err
	}
	r.CreatedAt, r.UpdatedAt, r.FinishedAt = parseTime(created), parseTime(updated), parseTime(finished)
	r.LeaseUntil = parseTime(lease)
	if failure != "" {
		r.Failure = json.RawMessage(failure)
	}
	if pending != "" {
		r.Pending = json.RawMessage(pending)
	}
	if err := json.Unmarshal([]byte(score), &r.Scorecard); err != nil {
		return nil, fmt.Errorf("run %s: scorecard: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(inputs), &r.Inputs); err != nil {
		return nil, fmt.Errorf("run %s: inputs: %w", r.ID, err)
	}
	r.Config = json.RawMessage(cfg)
	if state != "" {
		r.State = json.RawMessage(state)
	}
	return &r, nil
}

func (t *tenant) GetRun(ctx context.Context, id string) (*store.Run, error) {
	r, err := scanRun(t.db.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE tenant = ? AND id = ?", t.name, id))
	if errors.Is(err, sql.ErrNoRows) && len(id) >= 4 {
		rows, qerr := t.db.QueryContext(ctx, "SELECT "+runColumns+" FROM runs WHERE tenant = ? AND id LIKE ? ESCAPE '\\' LIMIT 2",
			t.name, escapeLike(id)+"%")
		if qerr != nil {
			return nil, fmt.Errorf("store: run %s: %w", id, qerr)
		}
		defer rows.Close()
		var found []*store.Run
		for rows.Next() {
			x, err := scanRun(rows)
			if err != nil {
				return nil, fmt.Errorf("store: run %s: %w", id, err)
			}
			found = append(found, x)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: run %s: %w", id, err)
		}
		switch len(found) {
		case 1:
			return found[0], nil
		case 2:
			return nil, fmt.Errorf("store: run %s: the prefix matches several runs", id)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: run %s: %w", id, err)
	}
	return r, nil
}

func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

func (t *tenant) ListRuns(ctx context.Context, f store.Filter) ([]*store.Run, error) {
	q := "SELECT " + runColumns + " FROM runs WHERE tenant = ?"
	args := []any{t.name}
	now := formatTime(t.now())
	switch f.Status {
	case "":
	case store.StatusInterrupted:
		q += " AND status = ? AND (owner = '' OR lease_until <= ?)"
		args = append(args, store.StatusRunning, now)
	case store.StatusRunning:
		q += " AND status = ? AND owner <> '' AND lease_until > ?"
		args = append(args, store.StatusRunning, now)
	default:
		q += " AND status = ?"
		args = append(args, f.Status)
	}
	if !f.Since.IsZero() {
		q += " AND created_at >= ?"
		args = append(args, formatTime(f.Since))
	}
	q += " ORDER BY created_at DESC, id"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := t.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	defer rows.Close()
	var out []*store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	return out, nil
}

func (t *tenant) Claim(ctx context.Context, id string, owner store.Owner) (*store.Run, error) {
	if owner == "" {
		return nil, errors.New("store: claim: no owner")
	}
	var run *store.Run
	err := t.tx(ctx, func(tx *sql.Tx) error {
		r, err := scanRun(tx.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE tenant = ? AND id = ?", t.name, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		until, err := t.takeLease(ctx, tx, "runs", "run", id, r.Status, r.Owner, r.LeaseUntil, owner)
		if err != nil {
			return err
		}
		r.Owner, r.LeaseUntil = owner, until
		run = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: claim: %w", err)
	}
	return run, nil
}

// takeLease gives owner, inside tx, the lease of the run or job (what, a
// row of table) id, whose status, owner and lease are those given: it
// refuses one that has ended or whose other owner's lease still runs
// (an expired or released lease is anyone's), and returns when the new
// lease runs out. Claim and ClaimJob take their leases here.
func (t *tenant) takeLease(ctx context.Context, tx *sql.Tx, table, what, id string, status interface{ Final() bool }, cur store.Owner, curUntil time.Time, owner store.Owner) (time.Time, error) {
	if status.Final() {
		return time.Time{}, fmt.Errorf("%s %s: %w (%s)", what, id, store.ErrEnded, status)
	}
	now := t.now()
	if cur != "" && cur != owner && curUntil.After(now) {
		return time.Time{}, fmt.Errorf("%s %s: %w (%s, its lease runs until %s)", what, id, store.ErrNotOwner, cur,
			curUntil.Local().Format(time.TimeOnly))
	}
	until := now.Add(t.lease)
	if _, err := tx.ExecContext(ctx, "UPDATE "+table+" SET owner = ?, lease_until = ? WHERE tenant = ? AND id = ?",
		string(owner), formatTime(until), t.name, id); err != nil {
		return time.Time{}, err
	}
	return until, nil
}

// owned checks, inside tx, that owner owns the run, and returns its step
// count.
func (t *tenant) owned(ctx context.Context, tx *sql.Tx, id string, owner store.Owner) (int, error) {
	var cur store.Owner
	var n int
	var status store.Status
	err := tx.QueryRowContext(ctx, "SELECT owner, steps, status FROM runs WHERE tenant = ? AND id = ?", t.name, id).Scan(&cur, &n, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	if status.Final() {
		return 0, fmt.Errorf("run %s: %w (%s)", id, store.ErrEnded, status)
	}
	if cur != owner || owner == "" {
		return 0, fmt.Errorf("run %s: %w (%s)", id, store.ErrNotOwner, cur)
	}
	return n, nil
}

func (t *tenant) Renew(ctx context.Context, id string, owner store.Owner) (time.Time, error) {
	var until time.Time
	err := t.tx(ctx, func(tx *sql.Tx) error {
		if _, err := t.owned(ctx, tx, id, owner); err != nil {
			return err
		}
		until = t.now().Add(t.lease)
		_, err := tx.ExecContext(ctx, "UPDATE runs SET lease_until = ? WHERE tenant = ? AND id = ?", formatTime(until), t.name, id)
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("store: renew: %w", err)
	}
	return until, nil
}

func (t *tenant) Record(ctx context.Context, id string, owner store.Owner, u store.Update) ([]store.Step, error) {
	var steps []store.Step
	err := t.tx(ctx, func(tx *sql.Tx) error {
		n, err := t.owned(ctx, tx, id, owner)
		if err != nil {
			return err
		}
		now := t.now()
		for _, st := range u.Steps {
			n++
			st.Seq, st.At = n, now
			if len(st.Data) == 0 {
				st.Data = json.RawMessage("{}")
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO steps (tenant, run_id, seq, at, kind, attempt, summary, data)
				VALUES (?,?,?,?,?,?,?,?)`, t.name, id, st.Seq, formatTime(now), st.Kind, st.Attempt, st.Summary, string(st.Data)); err != nil {
				return err
			}
			steps = append(steps, st)
		}
		sets := []string{"updated_at = ?", "steps = ?"}
		args := []any{formatTime(now), n}
		set := func(col string, v any) {
			sets = append(sets, col+" = ?")
			args = append(args, v)
		}
		if u.State != nil {
			set("state", string(u.State))
		}
		if u.Status != "" {
			set("status", string(u.Status))
			if u.Status.Final() {
				set("finished_at", formatTime(now))
				set("outcome", u.Outcome)
				set("answer", u.Answer)
				if len(u.Failure) > 0 && !json.Valid(u.Failure) {
					return errors.New("the failure report is not JSON")
				}
				set("failure", string(u.Failure))
			}
		}
		if u.Scorecard != nil {
			b, err := json.Marshal(u.Scorecard)
			if err != nil {
				return err
			}
			set("scorecard", string(b))
		}
		switch {
		case len(u.Pending) > 0:
			if !json.Valid(u.Pending) {
				return errors.New("the pending approval is not JSON")
			}
			set("pending", string(u.Pending))
		case u.ClearPending:
			set("pending", "")
		}
		if u.Release {
			set("owner", "")
			set("lease_until", "")
		} else {
			set("lease_until", formatTime(now.Add(t.lease)))
		}
		args = append(args, t.name, id)
		if _, err := tx.ExecContext(ctx, "UPDATE runs SET "+strings.Join(sets, ", ")+" WHERE tenant = ? AND id = ?", args...); err != nil {
			return err
		}
		for _, f := range u.Files {
			f.Role = store.RoleOutput
			if f.Step == 0 && len(steps) > 0 {
				f.Step = steps[0].Seq
			}
			if err := t.putFile(ctx, tx, id, f); err != nil {
				return err
			}
		}
		if u.CloseReviews != nil {
			if err := t.closeReviews(ctx, tx, id, *u.CloseReviews, now); err != nil {
				return err
			}
		}
		if u.Review != nil {
			if err := t.openReview(ctx, tx, id, *u.Review, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: record: %w", err)
	}
	return steps, nil
}

func (t *tenant) DeleteRun(ctx context.Context, id string) error {
	res, err := t.db.ExecContext(ctx, "DELETE FROM runs WHERE tenant = ? AND id = ?", t.name, id)
	if err != nil {
		return fmt.Errorf("store: delete run %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: delete run %s: %w", id, store.ErrNotFound)
	}
	return nil
}

func (t *tenant) Steps(ctx context.Context, runID string, kinds ...store.StepKind) ([]store.Step, error) {
	rows, err := t.db.QueryContext(ctx, "SELECT seq, at, kind, attempt, summary, data FROM steps WHERE tenant = ? AND run_id = ? ORDER BY seq",
		t.name, runID)
	if err != nil {
		return nil, fmt.Errorf("store: steps of %s: %w", runID, err)
	}
	defer rows.Close()
	keep := map[store.StepKind]bool{}
	for _, k := range kinds {
		keep[k] = true
	}
	var out []store.Step
	for rows.Next() {
		var st store.Step
		var at, data string
		if err := rows.Scan(&st.Seq, &at, &st.Kind, &st.Attempt, &st.Summary, &data); err != nil {
			return nil, fmt.Errorf("store: steps of %s: %w", runID, err)
		}
		if len(keep) > 0 && !keep[st.Kind] {
			continue
		}
		st.At, st.Data = parseTime(at), json.RawMessage(data)
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: steps of %s: %w", runID, err)
	}
	if len(out) == 0 {
		if err := t.exists(ctx, runID); err != nil {
			return nil, fmt.Errorf("store: steps of %s: %w", runID, err)
		}
	}
	return out, nil
}
