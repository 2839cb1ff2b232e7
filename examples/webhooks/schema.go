package webhooks

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/examples/apikit"
)

// schema is safe to run any number of times, by any number of processes:
// every statement is IF NOT EXISTS.
//
// processed_events' primary key is the whole guarantee. ledger.event_id is
// deliberately NOT unique: a unique index there would turn the
// check-then-insert variant's duplicate credits into errors, and idemcheck
// could no longer demonstrate them; the reference never relies on it.
//
// failed_first records the events whose first delivery was made to fail
// (data.failFirst, see doomed); refused_first those whose first delivery
// the flaky reference refused with 503 (see RefusesFirst).
const schema = `
CREATE TABLE IF NOT EXISTS processed_events (
	event_id     text        PRIMARY KEY,
	event_type   text        NOT NULL,
	processed_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS ledger (
	id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
	event_id     text        NOT NULL,
	event_type   text        NOT NULL,
	customer_id  text        NOT NULL,
	amount_cents bigint      NOT NULL CHECK (amount_cents > 0),
	created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS ledger_event_id_idx ON ledger (event_id);

CREATE TABLE IF NOT EXISTS failed_first (
	event_id     text        PRIMARY KEY,
	failed_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS refused_first (
	event_id     text        PRIMARY KEY,
	refused_at   timestamptz NOT NULL DEFAULT now()
);
`

// Migrate creates the tables if they do not exist yet.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return apikit.Migrate(ctx, pool, "webhooks", schema)
}
