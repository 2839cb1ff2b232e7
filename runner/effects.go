package runner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/targets"
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
	// DB, when set instead of Pool, is a database of another engine (a
	// MySQL or MariaDB one) that counts by the same rules: read-only,
	// rolled back, bounded by Timeout, checked before any traffic (its
	// Check, which Try runs).
	DB   targets.EffectDB
	SQL  string
	Args []idemcheck.Template
	// Timeout bounds one run of the query; zero means EffectTimeout.
	Timeout time.Duration
	// HTTP, when set, counts through the API instead of the database
	// (Pool, SQL and Args are then unused).
	HTTP *HTTPEffects
	// BatchSQL, when set, is the effect query's batch form, which
	// CountBatch runs once a batch instead of SQL once an intent: one
	// parameter, $1, the array of every intent's value of the one
	// argument (Args[0]), returning a row of that value as text and its
	// count for each value with effects (SELECT customer_id::text,
	// count(*) FROM orders WHERE customer_id = ANY($1) GROUP BY 1); a
	// value without a row counts 0 (rows of one value add up). Each batch
	// also runs SQL for its first intent, in the same transaction, and
	// fails if the two disagree. The observations still name SQL and the
	// intent's argument: the query that gives the intent's count alone.
	BatchSQL string
}

// EffectTimeout is the statement timeout of an effect query unless told
// otherwise: long enough for a count over an indexed column, short enough
// that a query scanning a large staging table stops by itself.
const EffectTimeout = 5 * time.Second

// ByKey reports whether the effect query is stated at the grain of a key:
// one of its arguments (or the read-back's path) holds {{key}}. Such a
// query counts what one key left, and an intent that sent several keys
// (distinct-keys sends a second one, a webhook sender a second event) is
// counted once per key (CountKeys).
func (e *Effects) ByKey() bool {
	if e.HTTP != nil {
		return e.HTTP.Path.Uses("key")
	}
	for _, t := range e.Args {
		if t.Uses("key") {
			return true
		}
	}
	return false
}

// CountKeys counts one intent's effects at the grain the query states: a
// query parameterised by {{key}} runs once for every key in keys (the
// distinct keys the intent's attempts sent, in order; "" is left out: a
// request without a key left nothing a key can find), and the observation
// holds the sum, each key's own count beside it; any other query runs
// once for the intent (Count). With no key at all the intent's own key is
// counted.
func (e *Effects) CountKeys(ctx context.Context, in idemcheck.Intent, keys []string) (idemcheck.Observation, error) {
	var distinct []string
	for _, k := range keys {
		if k != "" && !slices.Contains(distinct, k) {
			distinct = append(distinct, k)
		}
	}
	if !e.ByKey() || len(distinct) == 0 || len(distinct) == 1 && distinct[0] == in.Key {
		return e.Count(ctx, in)
	}
	var sum idemcheck.Observation
	for i, k := range distinct {
		one := in
		one.Key = k
		o, err := e.Count(ctx, one)
		if err != nil {
			return idemcheck.Observation{}, err
		}
		if i == 0 {
			sum = o
		} else {
			sum.Effects += o.Effects
		}
		ke := idemcheck.KeyEffects{Key: k, Effects: o.Effects, Args: o.Args}
		if o.Query != sum.Query {
			ke.Query = o.Query // a read-back's path holds the key
		}
		sum.Keys = append(sum.Keys, ke)
	}
	return sum, nil
}

// Count runs the effect query once for one intent, with its key.
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
// is the very one CheckEffectSQL validated. With BatchSQL the batch is one
// statement instead, checked against SQL on its first intent. Through the
// API (HTTP) each intent is read back in turn.
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
	if e.DB != nil {
		return e.countEach(ctx, ins, timeout)
	}
	tx, err := e.Pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", timeout.Milliseconds())); err != nil {
		return nil, err
	}
	if e.BatchSQL != "" {
		return e.countArray(ctx, tx, ins)
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

// countEach counts a batch through DB: the effect query once per intent,
// in one read-only transaction.
func (e *Effects) countEach(ctx context.Context, ins []idemcheck.Intent, timeout time.Duration) ([]idemcheck.Observation, error) {
	args := make([][]string, len(ins))
	for i, in := range ins {
		args[i] = make([]string, len(e.Args))
		for j, t := range e.Args {
			args[i][j] = t.Fill(in)
		}
	}
	ns, err := e.DB.CountEach(ctx, e.SQL, args, timeout)
	if err != nil {
		return nil, fmt.Errorf("effect query %q: %w", e.SQL, err)
	}
	out := make([]idemcheck.Observation, len(ins))
	for i, in := range ins {
		out[i] = idemcheck.Observation{Intent: in.ID, Check: in.Check, Effects: ns[i], Query: e.SQL, Args: args[i]}
	}
	return out, nil
}

// countArray counts a batch with BatchSQL in tx, and its first intent with
// SQL as well, both sent in one round trip.
func (e *Effects) countArray(ctx context.Context, tx pgx.Tx, ins []idemcheck.Intent) ([]idemcheck.Observation, error) {
	if len(ins) == 0 {
		return nil, nil
	}
	vals := make([]string, len(ins))
	for i, in := range ins {
		vals[i] = e.Args[0].Fill(in)
	}
	b := &pgx.Batch{}
	b.Queue(e.BatchSQL, vals)
	b.Queue(e.SQL, vals[0])
	br := tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	counts, err := scanCounts(br.Query())
	if err != nil {
		return nil, fmt.Errorf("effect batch query %q: %w", e.BatchSQL, err)
	}
	var one int64
	if err := br.QueryRow().Scan(&one); err != nil {
		return nil, fmt.Errorf("effect query %q for intent %s: %w", e.SQL, ins[0].ID, err)
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("effect batch query %q: %w", e.BatchSQL, err)
	}
	if counts[vals[0]] != one {
		return nil, fmt.Errorf("effect batch query %q counted %d for intent %s (%s) where the effect query %q counts %d: the two must count the same",
			e.BatchSQL, counts[vals[0]], ins[0].ID, vals[0], e.SQL, one)
	}
	out := make([]idemcheck.Observation, len(ins))
	for i, in := range ins {
		out[i] = idemcheck.Observation{Intent: in.ID, Check: in.Check, Effects: counts[vals[i]], Query: e.SQL, Args: []string{vals[i]}}
	}
	return out, nil
}

// scanCounts reads a batch query's rows: a value and its count.
func scanCounts(rows pgx.Rows, err error) (map[string]int64, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := map[string]int64{}
	for rows.Next() {
		var v string
		var n int64
		if err := rows.Scan(&v, &n); err != nil {
			return nil, err
		}
		counts[v] += n
	}
	return counts, rows.Err()
}

// TryBatch runs the batch query once for an intent no run made, as Try
// runs the query, so that a batch query that tries to write, times out or
// cannot take the argument as an array fails before any traffic is sent.
func (e *Effects) TryBatch(ctx context.Context) error {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = EffectTimeout
	}
	tx, err := e.Pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", timeout.Milliseconds())); err != nil {
		return err
	}
	in := idemcheck.Intent{ID: "ic-preflight-1", Key: "00000000-0000-4000-8000-000000000000", Seq: 1}
	_, err = scanCounts(tx.Query(ctx, e.BatchSQL, []string{e.Args[0].Fill(in)}))
	return err
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
	if e.DB != nil {
		return e.DB.Check(ctx, e.SQL, strs)
	}
	_, err := e.run(ctx, strs)
	return err
}

func (e *Effects) run(ctx context.Context, args []string) (int64, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = EffectTimeout
	}
	if e.DB != nil {
		ns, err := e.DB.CountEach(ctx, e.SQL, [][]string{args}, timeout)
		if err != nil {
			return 0, err
		}
		return ns[0], nil
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
