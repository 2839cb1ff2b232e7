package payments

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/idemcheck/idemcheck/examples/apikit"
)

// schema is safe to run any number of times: every statement is IF NOT
// EXISTS.
//
// payments.payment_id is deliberately NOT unique: a unique index there
// would turn unkeyed-effect's second payment into an error, and idemcheck
// could no longer show it; the reference keys its effect in payments_made.
const schema = `
CREATE TABLE IF NOT EXISTS payment_keys (
	tenant       text        NOT NULL,
	key          text        NOT NULL,
	fingerprint  text        NOT NULL,
	payment_id   text        NOT NULL,
	body         bytea       NOT NULL,
	created_at   timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (tenant, key)
);

CREATE TABLE IF NOT EXISTS payments (
	id           bigserial   PRIMARY KEY,
	payment_id   text        NOT NULL,
	customer_id  text        NOT NULL,
	amount_cents bigint      NOT NULL CHECK (amount_cents > 0),
	created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS payments_customer_id_idx ON payments (customer_id);

CREATE TABLE IF NOT EXISTS payments_made (
	payment_id   text        PRIMARY KEY,
	made_at      timestamptz NOT NULL DEFAULT now()
);
`

// Migrate creates River's tables (its own migrations, through
// rivermigrate) and then the API's. River's migrations cannot run in one
// transaction (one adds an enum value another uses), so a session-level
// advisory lock, held on a connection of its own, keeps two processes
// starting at once from racing.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("payments: migrate: %w", err)
	}
	defer conn.Release()
	const lock = `hashtext('examples/payments migrate river')`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+lock+`)`); err != nil {
		return fmt.Errorf("payments: migrate: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+lock+`)`) }()
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("payments: migrate river: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("payments: migrate river: %w", err)
	}
	return apikit.Migrate(ctx, pool, "payments", schema)
}
