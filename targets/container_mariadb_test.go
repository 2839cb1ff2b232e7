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
	assert.Equal(t, MySQLLinkReason, ct.Powers().NoDBLink())
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

// StartMariaDBContainer reports a missing image as ErrNoImage, so that
// ProvideMySQLDatabaseWith falls back to the local binaries.
func TestMariaDBContainerMissingImage(t *testing.T) {
	requireContainers(t)
	_, err := StartMariaDBContainer(context.Background(), missingImage)
	require.ErrorIs(t, err, ErrNoImage)
}
