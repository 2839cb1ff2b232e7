package faults

import (
	"bufio"
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// mysqlSessionsQuery lists the client sessions of the current database
// but the one running it that do not wait for their client (Sleep: what
// the session of a held write looks like, in a transaction or not), with
// their state.
const mysqlSessionsQuery = `SELECT ID, COALESCE(STATE, '') FROM information_schema.PROCESSLIST
WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND <> 'Sleep'`

// MySQLSessions reads Sessions on MySQL or MariaDB, what SessionsQuery
// reads on PostgreSQL, through db (a pool that reaches the database
// directly, never through the link). It only reads: the sessions of
// information_schema.PROCESSLIST that are not idle (Sleep) are at work,
// unless they wait on a lock: a user lock (GET_LOCK) or a table or
// metadata lock, which their state says, or an InnoDB row lock (SELECT ...
// FOR UPDATE, a claim INSERT that waits on another's key), which the
// transactions in LOCK WAIT of SHOW ENGINE INNODB STATUS say.
//
// The row locks are not read from information_schema.INNODB_TRX: InnoDB
// refreshes that table's data only once nobody has read it for 0.1 s,
// and a barrier that looks every few milliseconds would read the same
// stale list for ever. Where SHOW ENGINE INNODB STATUS is refused (no
// PROCESS privilege), a session waiting on a row lock counts as at work:
// the barrier then waits for its quiet time or its bound instead.
func MySQLSessions(ctx context.Context, db *sql.DB) (Sessions, error) {
	var s Sessions
	rows, err := db.QueryContext(ctx, mysqlSessionsQuery)
	if err != nil {
		return s, err
	}
	type session struct {
		id    int64
		state string
	}
	var open []session
	for rows.Next() {
		var x session
		if err := rows.Scan(&x.id, &x.state); err != nil {
			rows.Close()
			return s, err
		}
		open = append(open, x)
	}
	if err := rows.Close(); err != nil {
		return s, err
	}
	if len(open) == 0 {
		return s, nil
	}
	var typ, name, status string
	waits := map[int64]bool{}
	if db.QueryRowContext(ctx, "SHOW ENGINE INNODB STATUS").Scan(&typ, &name, &status) == nil {
		waits = lockWaits(status)
	}
	for _, x := range open {
		if waits[x.id] || x.state == "User lock" || (strings.HasPrefix(x.state, "Waiting for ") && strings.Contains(x.state, "lock")) {
			s.Waiting++
		} else {
			s.Working++
		}
	}
	return s, nil
}

// lockWaits reads the thread ids of the transactions that wait on a lock
// from the TRANSACTIONS section of SHOW ENGINE INNODB STATUS: each
// transaction starts with a "---TRANSACTION" line; "LOCK WAIT" and
// "MySQL thread id N" (MariaDB: "MariaDB thread id N") lines follow, in
// either order.
func lockWaits(status string) map[int64]bool {
	waits := map[int64]bool{}
	var id int64 = -1
	wait := false
	flush := func() {
		if wait && id >= 0 {
			waits[id] = true
		}
		id, wait = -1, false
	}
	sc := bufio.NewScanner(strings.NewReader(status))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "---TRANSACTION"):
			flush()
		case strings.HasPrefix(line, "LOCK WAIT"):
			wait = true
		case strings.HasPrefix(line, "MySQL thread id "), strings.HasPrefix(line, "MariaDB thread id "):
			_, rest, _ := strings.Cut(line, " thread id ")
			if i := strings.IndexAny(rest, ", "); i >= 0 {
				rest = rest[:i]
			}
			if n, err := strconv.ParseInt(rest, 10, 64); err == nil {
				id = n
			}
		}
	}
	flush()
	return waits
}
