package targets

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/internal/testctx"
)

// ordersMySQLImage is the MariaDB orders API's image, built by make images.
const ordersMySQLImage = "idemcheck/ordersmysql:local"

// A target image whose database is of the MySQL family gets a MariaDB
// container of the locally built image, its DATABASE_URL (and MYSQL_DSN)
// naming it directly; its effects are counted there, and Close removes
// both containers.
func TestContainerTargetOnMariaDB(t *testing.T) {
	requireContainers(t, ordersMySQLImage, DefaultMariaDBImage)
	ctx := testctx.UntilDeadline(t)
	docker := testDocker(t)

	var log strings.Builder
	ct, err := StartContainerTarget(ctx, ContainerOptions{Image: ordersMySQLImage, Engine: EngineMySQL, Log: &log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ct.Close() })
	assert.Empty(t, log.String(), "no fallback: the MariaDB image is there")
	assert.Equal(t, EngineMySQL, ct.DB.Engine)
	assert.Equal(t, SourceContainer, ct.DB.Source)
	assert.True(t, strings.HasPrefix(ct.DB.DSN, "mysql://idemcheck:"), "a user of its own, with a password: %s", RedactDSN(ct.DB.DSN))
	assert.Empty(t, ct.Powers().NoDBLink(), "the database link is faulted, on MySQL as on PostgreSQL")
	dbID := containerOf(t, ct.DB)
	targetID := ct.Container.ID()

	base := ct.URL.String()
	hc := httpClient(30 * time.Second)
	customer, key := uuid.NewString(), uuid.NewString()
	for range 2 {
		code, body, err := postOrder(hc, base, key, customer)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code, body)
	}
	counts, err := ct.DB.SQL.CountEach(ctx, "SELECT count(*) FROM orders WHERE customer_id = ?", [][]string{{customer}}, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, counts, "a replay makes no second order")

	require.NoError(t, ct.Close())
	requireRemoved(t, docker, targetID, "ContainerTarget.Close")
	requireRemoved(t, docker, dbID, "ContainerTarget.Close")
}

// Without the MariaDB image (or without Docker) ProvideMySQLDatabaseWith
// says why in one line and starts the local MariaDB; a DSN comes first,
// with nothing to say.
func TestProvideMySQLDatabaseWithFallsBack(t *testing.T) {
	if _, err := FindMariaDB(); err != nil {
		t.Skipf("needs the MariaDB server binary: %v", err)
	}
	ctx := testctx.UntilDeadline(t)
	var lines []string
	db, err := ProvideMySQLDatabaseWith(ctx, "", ProvideOptions{DBImage: missingImage, Log: func(s string) { lines = append(lines, s) }})
	require.NoError(t, err)
	defer db.Close()
	assert.Equal(t, SourceLocal, db.Source)
	assert.Equal(t, EngineMySQL, db.Engine)
	require.Len(t, lines, 1)
	assert.NotContains(t, lines[0], "\n")
	if DockerAvailable(ctx) == nil {
		assert.Contains(t, lines[0], missingImage)
		_, err := StartMariaDBContainer(context.Background(), missingImage)
		require.ErrorIs(t, err, ErrNoImage)
	} else {
		assert.Contains(t, lines[0], "no Docker engine")
	}

	lines = nil
	byDSN, err := ProvideMySQLDatabaseWith(ctx, db.DSN, ProvideOptions{DBImage: missingImage, Log: func(s string) { lines = append(lines, s) }})
	require.NoError(t, err)
	defer byDSN.Close()
	assert.Equal(t, SourceDSN, byDSN.Source)
	assert.Empty(t, lines)
}
