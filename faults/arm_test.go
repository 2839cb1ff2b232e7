package faults

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// watchedConn opens one long-lived target connection through the watched
// proxy: the situation of a target started once with a fixed DSN.
func (s *shop) watchedConn(t *testing.T) *pgx.Conn {
	t.Helper()
	return s.watchedConnMode(t, pgx.QueryExecModeCacheStatement)
}

// watchedConnMode is watchedConn with pgx sending statements as mode.
func (s *shop) watchedConnMode(t *testing.T, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	addr, err := s.link.WatchedAddr()
	require.NoError(t, err)
	dsn, err := RewriteDSN(s.dsn, addr)
	require.NoError(t, err)
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.DefaultQueryExecMode = mode
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func (s *shop) count(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, s.direct.QueryRow(context.Background(), "SELECT count(*) FROM orders").Scan(&n))
	return n
}

func insertTx(ctx context.Context, c *pgx.Conn, id int) error {
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO orders VALUES ($1)", id); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Arming acts on a connection opened long before, counts its nth from the
// moment it is armed, acts once, and stops at disarm.
func TestArmOnTheWatchedProxy(t *testing.T) {
	s := newShop(t)
	ctx := context.Background()
	c := s.watchedConn(t)
	require.NoError(t, insertTx(ctx, c, 1), "clean until armed")

	disarm, err := s.link.Arm(DBCut("", 1))
	require.NoError(t, err)
	assert.Error(t, insertTx(ctx, c, 2), "the commit after arming is cut")
	disarm()
	assert.Equal(t, 1, s.count(t), "the cut transaction was rolled back")

	c2 := s.watchedConn(t) // the cut closed c; a pool would reconnect
	require.NoError(t, insertTx(ctx, c2, 3), "disarmed: clean again")

	disarm, err = s.link.Arm(DBHold("", 1))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- insertTx(ctx, c2, 4) }()
	select {
	case ev := <-s.link.Held():
		assert.Regexp(t, `(?i)commit`, ev.SQL)
		assert.Equal(t, 2, s.count(t), "held: not committed yet")
		require.NoError(t, ev.Release())
	case <-time.After(testTimeout):
		t.Fatal("no hold event")
	}
	require.NoError(t, <-done)
	disarm()
	assert.Equal(t, 3, s.count(t))

	disarm, err = s.link.Arm(DBLatency(80 * time.Millisecond))
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, c2.QueryRow(ctx, "SELECT 1").Scan(new(int)))
	assert.GreaterOrEqual(t, time.Since(start), 80*time.Millisecond, "the latency applies to a live connection")
	disarm()

	_, err = s.link.Arm(CutReply)
	assert.ErrorContains(t, err, "only database faults")
}
