package orders

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/examples/apikit"
)

// schema is safe to run any number of times, by any number of processes:
// every statement is IF NOT EXISTS.
//
// The key table is the whole guarantee. Its primary key (client, key) is
// what makes the claim atomic and keeps one client's keys apart from
// another's; the fingerprint keeps an order's key apart from a payment's;
// the token is the fencing token that lets only the current lease holder
// commit.
//
// orders.idempotency_key and payments.idempotency_key are deliberately NOT
// unique. A unique index there would hide the zoo's duplicate-creating bugs
// (it would turn a duplicate charge into a 500) and idemcheck could no
// longer demonstrate them; the reference never relies on it.
//
// processor_declines is the state of the card processor stand-in
// (effects.go): the payers it has declined once.
const schema = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
	client          bytea       NOT NULL DEFAULT '\x', -- '\x': no Authorization
	key             text        NOT NULL,
	fingerprint     bytea       NOT NULL,
	status          text        NOT NULL CHECK (status IN ('running', 'done')),
	token           uuid        NOT NULL,
	locked_until    timestamptz NOT NULL,
	response_status integer,
	response_body   bytea,
	content_type    text,
	created_at      timestamptz NOT NULL DEFAULT now(),
	finished_at     timestamptz,
	PRIMARY KEY (client, key)
);

CREATE TABLE IF NOT EXISTS orders (
	id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
	client          bytea       NOT NULL DEFAULT '\x',
	customer_id     text        NOT NULL,
	total_cents     bigint      NOT NULL CHECK (total_cents > 0),
	idempotency_key text        NOT NULL,
	created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS orders_idempotency_key_idx ON orders (idempotency_key);

CREATE TABLE IF NOT EXISTS payments (
	id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
	client          bytea       NOT NULL DEFAULT '\x',
	order_ref       text,
	customer_id     text,
	amount_cents    bigint      NOT NULL CHECK (amount_cents > 0),
	idempotency_key text        NOT NULL,
	created_at      timestamptz NOT NULL DEFAULT now(),
	CHECK ((order_ref IS NULL) <> (customer_id IS NULL))
);

CREATE INDEX IF NOT EXISTS payments_idempotency_key_idx ON payments (idempotency_key);

-- Databases made by the first version keyed idempotency_keys and the
-- effect tables by key alone: add the client and key the table by both.
ALTER TABLE idempotency_keys ADD COLUMN IF NOT EXISTS client bytea NOT NULL DEFAULT '\x';
ALTER TABLE orders ADD COLUMN IF NOT EXISTS client bytea NOT NULL DEFAULT '\x';
DO $$
BEGIN
	IF NOT EXISTS (
		SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		WHERE i.indrelid = 'idempotency_keys'::regclass AND i.indisprimary AND a.attname = 'client'
	) THEN
		ALTER TABLE idempotency_keys DROP CONSTRAINT IF EXISTS idempotency_keys_pkey;
		ALTER TABLE idempotency_keys ADD PRIMARY KEY (client, key);
	END IF;
END $$;

-- The payment provider's charge for an order or payment (provider.go),
-- written in the same statement as the row; NULL without a provider.
ALTER TABLE orders ADD COLUMN IF NOT EXISTS provider_charge_id text;
ALTER TABLE payments ADD COLUMN IF NOT EXISTS provider_charge_id text;

CREATE TABLE IF NOT EXISTS processor_declines (
	payer           text        PRIMARY KEY,
	declined_at     timestamptz NOT NULL DEFAULT now()
);
`

// Migrate creates the tables if they do not exist yet.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return apikit.Migrate(ctx, pool, "orders", schema)
}
