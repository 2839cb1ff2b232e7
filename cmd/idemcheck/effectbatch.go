package main

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/scenarios"
)

// checkEffectBatchSQL checks the soak's --effect-batch-sql before any
// traffic is sent, as certify.CheckEffectSQL checks --effect-sql: it goes
// with --effect-sql and one --effect-arg, takes one parameter, an array,
// returns the value as text and a count, calls no function that may write
// (scenarios.CheckFunctions), and runs once, read-only, within the
// statement timeout. It changes nothing.
func checkEffectBatchSQL(ctx context.Context, e *scenarios.Effects) error {
	const example = "such as SELECT customer_id::text, count(*) FROM orders WHERE customer_id = ANY($1) GROUP BY 1"
	if len(e.Args) != 1 {
		return idemcheck.Usagef("--effect-batch-sql takes the values of one --effect-arg as an array, and %d were given: give one, or leave --effect-batch-sql out", len(e.Args))
	}
	conn, err := e.Pool.Acquire(ctx)
	if err != nil {
		return idemcheck.Unavailablef("database: %v", err)
	}
	sd, err := conn.Conn().Prepare(ctx, "", e.BatchSQL)
	array := false
	if err == nil && len(sd.ParamOIDs) == 1 {
		t, ok := conn.Conn().TypeMap().TypeForOID(sd.ParamOIDs[0])
		array = ok && isArray(t)
	}
	conn.Release()
	if err != nil {
		return effectBatchError(err)
	}
	if len(sd.ParamOIDs) != 1 {
		return idemcheck.Usagef("--effect-batch-sql takes one parameter, $1, the array of the intents' --effect-arg values, and this query takes %d: write it %s", len(sd.ParamOIDs), example)
	}
	if !array {
		return idemcheck.Usagef("--effect-batch-sql's $1 is not an array: compare with = ANY($1), %s", example)
	}
	if len(sd.Fields) != 2 {
		return idemcheck.Usagef("--effect-batch-sql must return two columns, the --effect-arg value as text and its count, and it returns %d: write it %s", len(sd.Fields), example)
	}
	switch sd.Fields[0].DataTypeOID {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID:
	default:
		return idemcheck.Usagef("--effect-batch-sql's first column %q is not text: cast it, as in %s", sd.Fields[0].Name, example)
	}
	switch sd.Fields[1].DataTypeOID {
	case pgtype.Int8OID, pgtype.Int4OID, pgtype.Int2OID:
	default:
		return idemcheck.Usagef("--effect-batch-sql's second column %q is not a whole number: return count(*), as in %s", sd.Fields[1].Name, example)
	}
	if err := scenarios.CheckFunctions(ctx, e.Pool, e.BatchSQL); err != nil {
		var wf *scenarios.WritingFunction
		if errors.As(err, &wf) {
			return idemcheck.Usagef("--effect-batch-sql must only read, and %v", wf)
		}
		return effectBatchError(err)
	}
	if err := e.TryBatch(ctx); err != nil {
		return effectBatchError(err)
	}
	return nil
}

func isArray(t *pgtype.Type) bool {
	_, ok := t.Codec.(*pgtype.ArrayCodec)
	return ok
}

// effectBatchError names --effect-batch-sql and says what PostgreSQL said.
func effectBatchError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "25006": // read_only_sql_transaction
			return idemcheck.Usagef("--effect-batch-sql must only read, and this query writes (PostgreSQL refused it in a read-only transaction: %s): count with SELECT", pe.Message)
		case "57014": // query_canceled: the statement timeout
			return idemcheck.Usagef("--effect-batch-sql took longer than %v for one intent: count over an indexed column", scenarios.EffectTimeout)
		}
		return idemcheck.Usagef("--effect-batch-sql: PostgreSQL says: %s (SQLSTATE %s)", pe.Message, pe.Code)
	}
	return idemcheck.Usagef("--effect-batch-sql: %v", err)
}
