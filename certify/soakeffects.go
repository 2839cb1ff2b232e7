package certify

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/runner"
)

// effectBatchExample is how a batch form is written.
const effectBatchExample = "such as SELECT customer_id::text, count(*) FROM orders WHERE customer_id = ANY($1) GROUP BY 1"

// checkEffectBatchSQL checks a soak's EffectBatchSQL (e.BatchSQL) before
// any traffic is sent, as checkEffectSQL checks EffectSQL: it goes with
// one EffectArgs value, takes one parameter, an array, returns the value
// as text and a count, calls no function that may write
// (runner.CheckFunctions), and runs once, read-only, within the
// statement timeout. It changes nothing.
func checkEffectBatchSQL(ctx context.Context, e *runner.Effects) error {
	const f = idemcheck.Field("EffectBatchSQL")
	if len(e.Args) != 1 {
		return batchUsage("%s takes the values of one %s as an array, and %d were given: give one, or leave %s out", f, idemcheck.Field("EffectArgs"), len(e.Args), f)
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
	switch {
	case err != nil:
		return effectBatchError(err)
	case len(sd.ParamOIDs) != 1:
		return batchUsage("%s takes one parameter, $1, the array of the intents' %s values, and this query takes %d: write it %s", f, idemcheck.Field("EffectArgs"), len(sd.ParamOIDs), effectBatchExample)
	case !array:
		return batchUsage("%s's $1 is not an array: compare with = ANY($1), %s", f, effectBatchExample)
	case len(sd.Fields) != 2:
		return batchUsage("%s must return two columns, the %s value as text and its count, and it returns %d: write it %s", f, idemcheck.Field("EffectArgs"), len(sd.Fields), effectBatchExample)
	}
	switch sd.Fields[0].DataTypeOID {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID:
	default:
		return batchUsage("%s's first column %q is not text: cast it, as in %s", f, sd.Fields[0].Name, effectBatchExample)
	}
	switch sd.Fields[1].DataTypeOID {
	case pgtype.Int8OID, pgtype.Int4OID, pgtype.Int2OID:
	default:
		return batchUsage("%s's second column %q is not a whole number: return count(*), as in %s", f, sd.Fields[1].Name, effectBatchExample)
	}
	if err := runner.CheckFunctions(ctx, e.Pool, e.BatchSQL); err != nil {
		var wf *runner.WritingFunction
		if errors.As(err, &wf) {
			return batchUsage("%s must only read, and %v", f, wf)
		}
		return effectBatchError(err)
	}
	if err := e.TryBatch(ctx); err != nil {
		return effectBatchError(err)
	}
	return nil
}

func batchUsage(format string, args ...any) error {
	return idemcheck.Fieldf(idemcheck.ExitUsage, "EffectBatchSQL", format, args...)
}

func isArray(t *pgtype.Type) bool {
	_, ok := t.Codec.(*pgtype.ArrayCodec)
	return ok
}

// effectBatchError names EffectBatchSQL and says what PostgreSQL said.
func effectBatchError(err error) error {
	const f = idemcheck.Field("EffectBatchSQL")
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "25006": // read_only_sql_transaction
			return batchUsage("%s must only read, and this query writes (PostgreSQL refused it in a read-only transaction: %s): count with SELECT", f, pe.Message)
		case "57014": // query_canceled: the statement timeout
			return batchUsage("%s took longer than %v for one intent: count over an indexed column", f, runner.EffectTimeout)
		}
		return batchUsage("%s: PostgreSQL says: %s (SQLSTATE %s)", f, pe.Message, pe.Code)
	}
	return batchUsage("%s: %v", f, err)
}
