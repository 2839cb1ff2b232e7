package serve

import (
	"fmt"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
)

// FailAfterConnError makes the process fail every request once one of
// cfg's database connections has failed under it (the link dropped, the
// server reset it): the returned wrapper answers 500 to everything but GET
// /healthz from then on, while the process stays up and healthy to its
// readiness probe. That is a Python web worker (Flask, Django, under
// gunicorn) that opens one global psycopg2 connection at import and never
// handles OperationalError: after the drop, each request meets the closed
// connection ("connection already closed") until the worker is restarted.
func FailAfterConnError(cfg *pgconn.Config, who string) func(http.Handler) http.Handler {
	var broken atomic.Bool
	onConnError(cfg, func(err error) {
		if !broken.Swap(true) {
			fmt.Fprintf(os.Stderr, "%s: database connection terminated unexpectedly: %v\n", who, err)
			fmt.Fprintf(os.Stderr, "%s: every request fails from now on: nothing reconnects (-fail-after-db-error)\n", who)
		}
	})
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if broken.Load() && !(r.Method == http.MethodGet && r.URL.Path == "/healthz") {
				http.Error(w, "connection already closed", http.StatusInternalServerError)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
}
