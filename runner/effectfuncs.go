package runner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A WritingFunction is a function an effect query calls that could change
// something even in a read-only transaction, or outside it, so the query
// is refused before it is ever run.
type WritingFunction struct {
	// Name is the function as PostgreSQL names it, with its argument
	// types: dblink_exec(text,text).
	Name string
	// Why says what marks it: "volatile", "from the extension dblink",
	// "administrative".
	Why string
}

func (w *WritingFunction) Error() string {
	return fmt.Sprintf("it calls %s, which is %s: a function that may write (even past the read-only transaction, as dblink and replication slots do) is refused; count with SELECT and reading functions only", w.Name, w.Why)
}

// sideEffecting names the functions in pg_catalog that act on the server
// whatever their volatility says. Every one of them is marked volatile in
// the PostgreSQL releases idemcheck knows, so the volatility rule refuses
// them already; the list stays so that a release or a build that marks
// one otherwise is still refused.
var sideEffecting = []string{
	"pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile", "pg_promote",
	"set_config", "pg_switch_wal", "pg_create_restore_point", "pg_backup_start", "pg_backup_stop",
	"pg_start_backup", "pg_stop_backup", "pg_wal_replay_pause", "pg_wal_replay_resume",
	"pg_replication_origin_", "pg_create_", "pg_drop_replication_slot", "pg_copy_", "pg_replication_slot_advance",
	"pg_logical_slot_", "pg_logical_emit_message", "pg_advisory_", "pg_try_advisory_",
	"pg_file_", "pg_stat_reset", "pg_stat_clear", "pg_log_backend_memory_contexts",
	"lo_", "nextval", "setval", "pg_notify", "txid_current", "pg_current_xact_id",
	"pg_import_system_collations", "pg_truncate_visibility_map", "pg_prewarm", "dblink",
}

// deniedName reports whether a pg_catalog function's name is on the list,
// as a whole name or, for entries ending in "_", as a prefix.
func deniedName(name string) bool {
	for _, d := range sideEffecting {
		if name == d || (strings.HasSuffix(d, "_") && strings.HasPrefix(name, d)) {
			return true
		}
	}
	return false
}

// Fields of PostgreSQL's query tree (nodes/outfuncs.c) that hold the OID
// of a function (pg_proc) or of an operator (pg_operator, whose function
// is its oprcode). Every call a query makes appears in its tree as one of
// these: a function call, including one in FROM (a set-returning function)
// and a cast done by a function (FuncExpr :funcid); an operator, also in
// IN, ANY, NULLIF, IS DISTINCT FROM and a subquery's comparison (OpExpr,
// ScalarArrayOpExpr, DistinctExpr, NullIfExpr :opno and :opfuncid); an
// aggregate (Aggref :aggfnoid, whose support functions are looked up too);
// a window function (WindowFunc :winfnoid); ORDER BY, GROUP BY and
// DISTINCT (SortGroupClause :eqop, :sortop); a row comparison
// (RowCompareExpr :opnos); TABLESAMPLE (:tsmhandler). CTEs, subqueries
// and views are nested queries in the same tree (the rewritten tree has
// every view expanded and every row-level security policy added), so their
// calls are seen as well.
var (
	procField = regexp.MustCompile(`:(funcid|opfuncid|aggfnoid|winfnoid|hashfuncid|negfuncid|tsmhandler)\s+(\d+)`)
	operField = regexp.MustCompile(`:(opno|eqop|sortop)\s+(\d+)`)
	operList  = regexp.MustCompile(`:opnos\s+\(o((?:\s+\d+)*)\s*\)`)
)

// CheckFunctions refuses an effect query (SQL or BatchSQL, given as sql)
// that calls a function that may write: one PostgreSQL marks volatile, one
// that belongs to an extension (dblink_exec commits through a connection
// of its own, which the read-only transaction does not cover), or one on
// the list of administrative functions. It returns a *WritingFunction
// naming the first such function, or the error that kept it from looking.
//
// It asks PostgreSQL, not a parser of its own, which functions the query
// calls, by OID: in a READ ONLY transaction that is rolled back, with
// debug_print_rewritten on and client_min_messages at log (both settable
// by any user, neither a write), it prepares the query, and PostgreSQL
// sends back the query tree it analysed and rewrote, in which every call
// is a node holding its function's or operator's OID (see procField). The
// names a query uses (an overloaded function, an operator, a cast, a
// search_path) are resolved by the server exactly as it will run them, so
// no spelling of the query can call a function the check does not see.
// Preparing runs nothing: parse analysis and rewriting call no function
// of the query (a literal's type input function aside, which is the
// type's, not the query's to choose), and planning, where an immutable
// call with constant arguments would be evaluated early, never happens.
//
// What it cannot see is what a function does inside: a function written
// by someone with the right to create it and marked stable or immutable
// while it writes is taken at its word, as PostgreSQL's own planner takes
// it.
func CheckFunctions(ctx context.Context, pool *pgxpool.Pool, sql string) error {
	// The query tree comes on a connection of its own, the only way to
	// hear PostgreSQL's LOG messages; names resolve on it as on the
	// pool's (whose connections a hook may have given a search_path).
	var searchPath string
	if err := pool.QueryRow(ctx, "SELECT current_setting('search_path')").Scan(&searchPath); err != nil {
		return err
	}
	cfg := pool.Config().ConnConfig.Copy()
	var tree strings.Builder
	var got, preparing bool
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		// The message is errmsg_internal, never translated; the severity
		// is, unless read unlocalized.
		if preparing && (n.SeverityUnlocalized == "LOG" || n.SeverityUnlocalized == "" && n.Severity == "LOG") &&
			strings.HasPrefix(n.Message, "rewritten parse tree") {
			got = true
			tree.WriteString(n.Detail)
			tree.WriteByte('\n')
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SELECT set_config('search_path', $1, true)", searchPath); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL debug_print_rewritten = on; SET LOCAL debug_pretty_print = off; SET LOCAL client_min_messages = log"); err != nil {
		return fmt.Errorf("cannot ask PostgreSQL which functions the query calls: %w", err)
	}
	preparing = true
	_, err = tx.Conn().PgConn().Prepare(ctx, "", sql, nil)
	preparing = false
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL client_min_messages = notice; SET LOCAL debug_print_rewritten = off"); err != nil {
		return err
	}
	if !got {
		return errors.New("cannot ask PostgreSQL which functions the query calls: the server sent no query tree (a connection pooler in between, or a server that is not PostgreSQL?)")
	}
	procs, opers := calls(tree.String())
	if len(procs) == 0 && len(opers) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `
WITH called AS (
	SELECT unnest($1::oid[]) AS oid
	UNION SELECT oprcode::oid FROM pg_operator WHERE oid = ANY($2::oid[])
), support AS (
	SELECT oid FROM called
	UNION SELECT s FROM pg_aggregate g JOIN called c ON g.aggfnoid = c.oid,
		unnest(ARRAY[g.aggtransfn::oid, g.aggfinalfn::oid, g.aggcombinefn::oid, g.aggserialfn::oid,
			g.aggdeserialfn::oid, g.aggmtransfn::oid, g.aggminvtransfn::oid, g.aggmfinalfn::oid]) s
	WHERE s <> 0
)
SELECT s.oid::int8, coalesce(p.oid::regprocedure::text, ''), coalesce(p.proname::text, ''),
	coalesce(n.nspname::text, ''), coalesce(p.provolatile::text, ''),
	coalesce((SELECT string_agg(e.extname::text, ',') FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
		WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'), '')
FROM support s LEFT JOIN pg_proc p ON p.oid = s.oid LEFT JOIN pg_namespace n ON n.oid = p.pronamespace
ORDER BY 2`, procs, opers)
	if err != nil {
		return err
	}
	defer rows.Close()
	seen := map[uint32]bool{}
	var refused *WritingFunction
	for rows.Next() {
		var oid int64
		var name, proname, schema, volatile, ext string
		if err := rows.Scan(&oid, &name, &proname, &schema, &volatile, &ext); err != nil {
			return err
		}
		seen[uint32(oid)] = true
		var why string
		switch {
		case name == "":
			why = fmt.Sprintf("not in pg_proc (OID %d)", oid)
			name = "function " + strconv.FormatInt(oid, 10)
		case ext != "":
			why = "from the extension " + ext
		case volatile == "v":
			why = "volatile"
		case schema == "pg_catalog" && deniedName(proname):
			why = "administrative"
		default:
			continue
		}
		if refused == nil {
			refused = &WritingFunction{Name: name, Why: why}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if refused != nil {
		return refused
	}
	for _, p := range procs {
		if !seen[p] {
			// An OID the tree named that the catalogue query lost:
			// refuse rather than pass a call unseen.
			return &WritingFunction{Name: "function " + strconv.FormatUint(uint64(p), 10), Why: "not found in pg_proc"}
		}
	}
	return nil
}

// calls returns the function and operator OIDs a query tree names, each
// once, in order.
func calls(tree string) (procs, opers []uint32) {
	ps, os := map[uint32]bool{}, map[uint32]bool{}
	add := func(m map[uint32]bool, s string) {
		if n, err := strconv.ParseUint(s, 10, 32); err == nil && n != 0 {
			m[uint32(n)] = true
		}
	}
	for _, m := range procField.FindAllStringSubmatch(tree, -1) {
		add(ps, m[2])
	}
	for _, m := range operField.FindAllStringSubmatch(tree, -1) {
		add(os, m[2])
	}
	for _, m := range operList.FindAllStringSubmatch(tree, -1) {
		for _, f := range strings.Fields(m[1]) {
			add(os, f)
		}
	}
	return sorted(ps), sorted(os)
}

func sorted(m map[uint32]bool) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
