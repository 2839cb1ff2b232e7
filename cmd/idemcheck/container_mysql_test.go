package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/targets"
)

// ordersMySQLImage is the MariaDB orders API's image, built by make images.
const ordersMySQLImage = "idemcheck/ordersmysql:local"

// mysqlImageArgs certifies the MariaDB orders image's POST /orders on the
// MariaDB container idemcheck gives it, effects counted there.
func mysqlImageArgs(extra ...string) []string {
	args := []string{"certify", "--image", ordersMySQLImage, "--db-engine", "mysql", "--path", "/orders", "--body", mysqlBody,
		"--effect-sql", "SELECT count(*) FROM orders WHERE customer_id = ?", "--effect-arg", "{{intent}}", "--no-color"}
	return append(args, extra...)
}

// The MariaDB reference as an image, on a MariaDB container: PASS, its
// effects counted in that container's database, and nothing left on the
// Docker host.
func TestCertifyMariaDBImageReferencePasses(t *testing.T) {
	docker := requireDocker(t, ordersMySQLImage, targets.DefaultMariaDBImage)
	t.Setenv("DATABASE_URL", "")
	before := ownContainers(t, docker)
	code, out, errOut := cli(t, mysqlImageArgs("--checks", "concurrent-burst,sequential-replay")...)
	require.Equal(t, idemcheck.ExitHeld, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "verdict PASS")
	assert.Regexp(t, `mysql://idemcheck:xxxxx@127\.0\.0\.1:\d+/idemcheck`, out, "effects counted in the MariaDB container")
	assert.NotContains(t, errOut, "no MariaDB container", "no fallback to the local binaries")
	assert.ElementsMatch(t, before, ownContainers(t, docker), "containers left after the run")
}

// Its check-then-insert variant, chosen with --env, is caught by the
// concurrent burst: exit 1 with the duplicate effect.
func TestCertifyMariaDBImageCheckThenInsertCaught(t *testing.T) {
	docker := requireDocker(t, ordersMySQLImage, targets.DefaultMariaDBImage)
	t.Setenv("DATABASE_URL", "")
	before := ownContainers(t, docker)
	code, out, errOut := cli(t, mysqlImageArgs("--env", "ORDERS_VARIANT=check-then-insert", "--checks", "concurrent-burst")...)
	require.Equal(t, idemcheck.ExitAnomalies, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "verdict FAIL")
	assert.Contains(t, out, "duplicate-effect")
	assert.ElementsMatch(t, before, ownContainers(t, docker), "containers left after the run")
}
