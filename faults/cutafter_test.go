package faults

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

// db-cut-after lets an autocommitted INSERT run and cuts its answer: the
// client gets a connection error, yet the row is committed, and the landing
// says it was an autocommitted write. It is the failure that leaves a
// handler unsure whether its write happened.
func TestDBCutAfterAutocommitWrite(t *testing.T) {
	for _, m := range autocommitModes {
		t.Run(m.name, func(t *testing.T) {
			s := newShop(t)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			cut := DBCutAfter("", 0)
			conn := s.connect(t, cut, m.mode)
			id, err := s.autocommit(ctx, conn)
			require.Error(t, err, "through db-cut-after: the answer never arrives")
			assert.Equal(t, 1, s.rows(t, id), "the database ran and committed the write")
			l, acted := s.link.Landing(cut)
			require.True(t, acted)
			assert.Equal(t, idemcheck.LandedAutocommitWrite, l.Kind)
			assert.Contains(t, l.SQL, "INSERT INTO orders VALUES")
			assert.Equal(t, 1, s.link.Matches(cut))
		})
	}
}

// db-cut-after on each way of committing a transaction: the COMMIT reaches
// the database, the client gets an error, the row is committed.
func TestDBCutAfterCommit(t *testing.T) {
	for _, way := range commitWays {
		t.Run(way.name, func(t *testing.T) {
			s := newShop(t)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			cut := DBCutAfter("", 0)
			conn := s.connect(t, cut, way.mode)
			tx, id := s.insert(t, conn)
			assert.Equal(t, 0, s.rows(t, id), "not committed before the COMMIT")
			require.Error(t, way.commit(ctx, conn, tx), "through db-cut-after: the answer to the COMMIT never arrives")
			assert.Equal(t, 1, s.rows(t, id), "the COMMIT reached the database")
			l, acted := s.link.Landing(cut)
			require.True(t, acted)
			assert.Equal(t, idemcheck.LandedCommit, l.Kind)
		})
	}
}

// Armed on the watched proxy, db-cut-after acts on a connection opened
// before, after the answers to its earlier statements passed untouched,
// and once only: the next write through a new connection commits and is
// answered.
func TestDBCutAfterArmed(t *testing.T) {
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := s.watchedConn(t)
	require.NoError(t, insertTx(ctx, c, 1), "clean until armed")

	disarm, err := s.link.Arm(DBCutAfter("", 1))
	require.NoError(t, err)
	var n int
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n), "a read is answered")
	assert.Equal(t, 1, n)
	assert.Error(t, insertTx(ctx, c, 2), "the answer to the COMMIT is cut")
	assert.Equal(t, 2, s.count(t), "the cut COMMIT had committed")
	c2 := s.watchedConn(t)
	require.NoError(t, insertTx(ctx, c2, 3), "it acts once")
	l := disarm()
	assert.True(t, l.Acted())
	assert.Equal(t, idemcheck.LandedCommit, l.Kind)
	assert.Equal(t, 3, s.count(t))
}
