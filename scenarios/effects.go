package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck"
)

// Effects counts what one intent left in the database: SQL returning one
// number, with arguments filled per intent and bound, never spliced.
//
// The query never changes the database: every run of it is a READ ONLY
// transaction that is rolled back, with a statement timeout, so a DELETE,
// an UPDATE ... RETURNING or a data-modifying WITH typed by mistake against
// a staging database fails instead of running (PostgreSQL refuses a write
// in a read-only transaction with SQLSTATE 25006).
type Effects struct {
	Pool *pgxpool.Pool
	SQL  string
	Args []idemcheck.Template
	// Timeout bounds one run of the query; zero means EffectTimeout.
	Timeout time.Duration
	// HTTP, when set, counts through the API instead of the database
	// (Pool, SQL and Args are then unused).
	HTTP *HTTPEffects
}

// EffectTimeout is the statement timeout of an effect query unless told
// otherwise: long enough for a count over an indexed column, short enough
// that a query scanning a large staging table stops by itself.
const EffectTimeout = 5 * time.Second

// Count runs the effect query for one intent.
func (e *Effects) Count(ctx context.Context, in idemcheck.Intent) (idemcheck.Observation, error) {
	if e.HTTP != nil {
		n, path, err := e.HTTP.count(ctx, in)
		if err != nil {
			return idemcheck.Observation{}, fmt.Errorf("effect read-back: %w", err)
		}
		return idemcheck.Observation{Intent: in.ID, Check: in.Check, Effects: n, Query: "GET " + path + " " + pointerName(e.HTTP.Count),
			Via: idemcheck.ViaHTTP}, nil
	}
	strs := make([]string, len(e.Args))
	for i, t := range e.Args {
		strs[i] = t.Fill(in)
	}
	n, err := e.run(ctx, strs)
	if err != nil {
		return idemcheck.Observation{}, fmt.Errorf("effect query %q: %w", e.SQL, err)
	}
	return idemcheck.Observation{Intent: in.ID, Check: in.Check, Effects: n, Query: e.SQL, Args: strs}, nil
}

// EffectBatch is how many intents CountBatch counts in one round trip
// when the soak counts them.
const EffectBatch = 256

// CountBatch counts the effects of several intents at once: the effect
// query, unchanged, queued once per intent and sent as one pipelined batch
// in one READ ONLY transaction (as Count's, rolled back), so a batch costs
// one round trip to the database instead of one per intent, and the query
// is the very one CheckEffectSQL validated. Through the API (HTTP) each
// intent is read back in turn.
func (e *Effects) CountBatch(ctx context.Context, ins []idemcheck.Intent) ([]idemcheck.Observation, error) {
	out := make([]idemcheck.Observation, 0, len(ins))
	if e.HTTP != nil {
		for _, in := range ins {
			o, err := e.Count(ctx, in)
			if err != nil {
				return out, err
			}
			out = append(out, o)
		}
		return out, nil
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = EffectTimeout
	}
	tx, err := e.Pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", timeout.Milliseconds())); err != nil {
		return nil, err
	}
	args := make([][]string, len(ins))
	b := &pgx.Batch{}
	for i, in := range ins {
		args[i] = make([]string, len(e.Args))
		vals := make([]any, len(e.Args))
		for j, t := range e.Args {
			args[i][j] = t.Fill(in)
			vals[j] = args[i][j]
		}
		b.Queue(e.SQL, vals...)
	}
	br := tx.SendBatch(ctx, b)
	for i, in := range ins {
		var n int64
		if err := br.QueryRow().Scan(&n); err != nil {
			_ = br.Close()
			return out, fmt.Errorf("effect query %q for intent %s: %w", e.SQL, in.ID, err)
		}
		out = append(out, idemcheck.Observation{Intent: in.ID, Check: in.Check, Effects: n, Query: e.SQL, Args: args[i]})
	}
	if err := br.Close(); err != nil {
		return out, fmt.Errorf("effect query %q: %w", e.SQL, err)
	}
	return out, nil
}

// Try runs the query once for an intent no run made, so that a query that
// tries to write, times out or returns no number fails before any traffic
// is sent. It changes nothing either.
func (e *Effects) Try(ctx context.Context) error {
	in := idemcheck.Intent{ID: "ic-preflight-1", Key: "00000000-0000-4000-8000-000000000000", Seq: 1}
	if e.HTTP != nil {
		_, _, err := e.HTTP.count(ctx, in)
		return err
	}
	strs := make([]string, len(e.Args))
	for i, t := range e.Args {
		strs[i] = t.Fill(in)
	}
	_, err := e.run(ctx, strs)
	return err
}

func (e *Effects) run(ctx context.Context, args []string) (int64, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = EffectTimeout
	}
	tx, err := e.Pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, err
	}
	// Rolled back whatever happens: the query is only ever read.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", timeout.Milliseconds())); err != nil {
		return 0, err
	}
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a
	}
	var n int64
	if err := tx.QueryRow(ctx, e.SQL, vals...).Scan(&n); err != nil {
		return 0, err
	}
	return n, nil
}
