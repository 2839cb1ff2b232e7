// Package apikit holds what the example APIs (examples/orders and
// examples/webhooks) share in their own code: the list of an API's
// variants, the migration of its schema, its RFC 7807 problem replies and
// its readiness probe. Like the APIs, it depends on nothing of the harness
// that tests them; their servers' plumbing (pool, HTTP server, process) is
// examples/serve's.
package apikit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Variant is one implementation of an example API: its reference, or a
// variant carrying one classic bug. Check and Anomaly name the idemcheck
// check that catches the bug and the anomaly kind that check reports (both
// empty for a reference): idemcheck's stable names, written out so that an
// example does not depend on the harness that tests it. Impl is what the
// API needs to run the variant. Needs says what idemcheck must be able
// to do to the running API for Check to reach the bug (NeedsLink,
// NeedsProvider); empty when any run reaches it, by URL too.
type Variant[N ~string, I any] struct {
	Name           N
	Check, Anomaly string
	Needs          string
	Impl           I
}

// What a variant's bug needs idemcheck to be able to do (Variant.Needs).
const (
	// NeedsLink: hold or cut the API's database link, which idemcheck
	// owns only for an API it starts (a timed burst misses a narrow race;
	// a failure inside the server needs the link cut).
	NeedsLink = "database link"
	// NeedsProvider: watch the API's calls to its payment provider,
	// through a double idemcheck serves to an API it starts.
	NeedsProvider = "payment provider double"
)

// Needs says what idemcheck must be able to do for n's check to reach
// its bug (Variant.Needs).
func (vs Variants[N, I]) Needs(n N) string {
	v, _ := vs.Lookup(n)
	return v.Needs
}

// Variants lists an API's variants, its reference first.
type Variants[N ~string, I any] []Variant[N, I]

// Lookup returns the variant called n.
func (vs Variants[N, I]) Lookup(n N) (Variant[N, I], bool) {
	for _, v := range vs {
		if v.Name == n {
			return v, true
		}
	}
	return Variant[N, I]{}, false
}

// Names lists the variants' names, in order.
func (vs Variants[N, I]) Names() []N {
	out := make([]N, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}

// Parse turns a flag or environment value into a variant's name; its
// error names the API (app) and lists the known variants.
func (vs Variants[N, I]) Parse(app, s string) (N, error) {
	if _, ok := vs.Lookup(N(s)); ok {
		return N(s), nil
	}
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = string(v.Name)
	}
	return "", fmt.Errorf("%s: unknown variant %q (known: %s)", app, s, strings.Join(names, ", "))
}

// Expectation names the check that catches n's bug and the anomaly kind
// it reports: ("", "") for a reference, and for a name that is not a
// variant.
func (vs Variants[N, I]) Expectation(n N) (check, anomaly string) {
	v, _ := vs.Lookup(n)
	return v.Check, v.Anomaly
}

// Must returns the variant called n, the first (the reference) when n is
// empty. It panics on an unknown name, a programming error: input goes
// through Parse.
func (vs Variants[N, I]) Must(app string, n N) Variant[N, I] {
	if n == "" {
		return vs[0]
	}
	v, ok := vs.Lookup(n)
	if !ok {
		_, err := vs.Parse(app, string(n))
		panic(err)
	}
	return v
}

// ProblemContentType is the media type of an RFC 7807 problem document.
const ProblemContentType = "application/problem+json"

// Problem is the body of an RFC 7807 problem document for status, with
// detail saying what went wrong.
func Problem(status int, detail string) []byte {
	body, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}{"about:blank", http.StatusText(status), status, detail})
	return body
}

// WriteProblem answers with an RFC 7807 problem document.
func WriteProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", ProblemContentType)
	w.WriteHeader(status)
	_, _ = w.Write(Problem(status, detail))
}

// Healthz answers GET /healthz with 200. An example's process migrates
// before it listens, so once it answers at all the database was reachable:
// a readiness probe needs no more.
func Healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}

// Migrate runs schema, which must be safe to run any number of times
// (every statement IF NOT EXISTS), on pool for the API app. Two processes
// starting at once can race on CREATE ... IF NOT EXISTS (it is not atomic
// in PostgreSQL), so it runs in one transaction under a transaction-scoped
// advisory lock named after app, which serialises them.
func Migrate(ctx context.Context, pool *pgxpool.Pool, app, schema string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("%s: migrate: %w", app, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "examples/"+app+" migrate"); err != nil {
		return fmt.Errorf("%s: migrate: %w", app, err)
	}
	if _, err := tx.Exec(ctx, schema); err != nil {
		return fmt.Errorf("%s: migrate: %w", app, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("%s: migrate: %w", app, err)
	}
	return nil
}
