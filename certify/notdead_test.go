package certify_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/targets"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// certifyCommand starts command as a process target and runs one check
// on it; it returns the result and the target's port, for a look after
// the target was closed.
func certifyCommand(t *testing.T, command, check string) (*certify.Result, int) {
	t.Helper()
	ctx := context.Background()
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{Command: command, DSN: pgtest.DSN(t)})
	require.NoError(t, err)
	port := pt.Process.Instances()[0].Port()
	defer pt.Close()
	cfg := ordersConfig(pt.URL, pt.DB.Pool)
	cfg.Policy.Lease = testLease
	cfg.Powers, cfg.Replicas = pt.Powers(), pt.Replicas()
	cfg.Checks = []string{check}
	res, err := certify.Run(ctx, cfg)
	require.NoError(t, err)
	return res, port
}

// portRefuses reports whether nothing accepts connections on the port.
func portRefuses(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return true
	}
	_ = c.Close()
	return false
}

// A target started through setsid leaves idemcheck's process group: a kill
// of the group alone left it running, so restart-replay "restarted" a
// process that never died and passed a key store kept in memory. Now the
// kill reaches it, the restart is a real one, the bug is caught, and
// nothing is left running once the target is closed.
func TestASetsidTargetIsReallyKilledAndItsInMemoryKeysAreCaught(t *testing.T) {
	for _, wrap := range []struct{ name, format string }{
		{"setsid", "setsid %s"},
		// A shell that double-forks the server into its own session and
		// waits: the server is not the leader's child any more.
		{"double-fork", "( setsid %s & ) ; exec sleep 3600"},
	} {
		t.Run(wrap.name, func(t *testing.T) {
			command := strings.Replace(wrap.format, "%s",
				ordersBinary(t)+" -lease "+testLease.String()+" -variant "+string(orders.InMemoryKeyStore), 1)
			res, port := certifyCommand(t, command, idemcheck.CheckRestartReplay)
			require.Len(t, res.Report.Checks, 1)
			c := res.Report.Checks[0]
			assert.Equal(t, idemcheck.Fail, c.Status, c.Reason)
			assert.Contains(t, kindsOf(res.Report), idemcheck.DuplicateEffect)
			assert.NotEmpty(t, events(res.History, idemcheck.TargetKilled))
			assert.Empty(t, events(res.History, idemcheck.TargetNotDead))
			assert.True(t, portRefuses(port), "the target still serves its port after it was closed")
		})
	}
}
