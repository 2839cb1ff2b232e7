package targets

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	// The "pgx" database/sql driver, for the readiness wait (wait.ForSQL).
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/wait"
)

// DefaultPostgresImage is the PostgreSQL image used when none is named:
// the one make images builds from this machine's PostgreSQL 15 binaries,
// so it needs no registry. Any image that behaves like the official
// postgres image works too.
const DefaultPostgresImage = "idemcheck/postgres:15-local"

// SourceContainer is Database.Source for a database in a PostgreSQL
// container that was started for this run.
const SourceContainer = "container"

// postgresReadyTimeout bounds the wait for a PostgreSQL container to take
// connections; a first start runs initdb, about 1-2 s.
var postgresReadyTimeout = 60 * time.Second

// Credentials of a PostgreSQL container. The password is random per
// container: on host networking every local user can reach the port.
const (
	containerDBUser = "idemcheck"
	containerDBName = "idemcheck"
)

// containerDatabases maps each Database that StartPostgresContainer
// returned to its container, which Database.Close removes through
// closeContainer.
var containerDatabases sync.Map // *Database -> *tcpostgres.PostgresContainer

// StartPostgresContainer starts image (DefaultPostgresImage when empty)
// through the testcontainers-go PostgreSQL module, on host networking at a
// free loopback port, waits until it takes connections, and opens its
// database. Close the Database to remove the container; containers of runs
// that were killed are removed at the next start.
//
// The error wraps ErrNoDocker when no engine answers and ErrNoImage when
// the image is not on the Docker host, so a caller can fall back.
func StartPostgresContainer(ctx context.Context, image string) (*Database, error) {
	if image == "" {
		image = DefaultPostgresImage
	}
	docker, err := dockerFor(ctx, image)
	if err != nil {
		return nil, err
	}
	// The containers keep their own clients; this one only checked.
	defer docker.Close()
	for attempt := 0; ; attempt++ {
		port, err := pickPort()
		if err != nil {
			return nil, fmt.Errorf("cannot find a free port on 127.0.0.1: %v", err)
		}
		db, err := startPostgresContainer(ctx, image, port)
		if err == nil {
			return db, nil
		}
		if !errors.Is(err, errPortTaken) || attempt == portRetries {
			return nil, err
		}
	}
}

func startPostgresContainer(ctx context.Context, image string, port int) (*Database, error) {
	password, err := randomPassword()
	if err != nil {
		return nil, err
	}
	p := strconv.Itoa(port)
	// With host networking there are no port mappings: the server itself
	// must listen on the free port, and only on loopback. -c options work
	// with the official image as with the local one; PGPORT also steers the
	// official image's temporary init server.
	opts := append(containerOptions(),
		tcpostgres.WithUsername(containerDBUser),
		tcpostgres.WithPassword(password),
		tcpostgres.WithDatabase(containerDBName),
		testcontainers.WithEnv(map[string]string{"PGPORT": p}),
		testcontainers.WithCmdArgs("-c", "listen_addresses=127.0.0.1", "-c", "port="+p),
		testcontainers.WithWaitStrategyAndDeadline(postgresReadyTimeout,
			wait.ForSQL(p+"/tcp", "pgx", func(_ string, port network.Port) string {
				return containerDSN(password, port.Port())
			}).WithStartupTimeout(postgresReadyTimeout).WithPollInterval(containerReadyPoll)),
	)
	pg, err := tcpostgres.Run(ctx, image, opts...)
	if err != nil {
		var ctr *testcontainers.DockerContainer
		if pg != nil {
			ctr, _ = pg.Container.(*testcontainers.DockerContainer)
		}
		return nil, failedStart(ctr, fmt.Sprintf("PostgreSQL container %s on 127.0.0.1:%d", image, port), err)
	}
	remove := func() {
		ctx, cancel := context.WithTimeout(context.Background(), containerCleanupTimeout)
		defer cancel()
		_ = pg.Terminate(ctx, testcontainers.StopTimeout(0))
	}
	dsn, err := pg.ConnectionString(ctx, "sslmode=disable")
	if err == nil {
		dsn, err = onLoopback(dsn, port)
	}
	if err != nil {
		remove()
		return nil, fmt.Errorf("PostgreSQL container %s: %v", image, err)
	}
	db, err := OpenDatabase(ctx, dsn)
	if err != nil {
		remove()
		return nil, err
	}
	db.Source = SourceContainer
	containerDatabases.Store(db, pg)
	return db, nil
}

// onLoopback points the module's connection string at 127.0.0.1:port. On
// host networking the module reports the container's port 5432 (there is
// no mapping to look up) and a host that can name another interface,
// while the server listens on 127.0.0.1 at the port picked for it.
func onLoopback(dsn string, port int) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("unexpected connection string: %v", err)
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return u.String(), nil
}

// containerDSN is the DSN the readiness wait connects with.
func containerDSN(password, port string) string {
	u := url.URL{
		Scheme: "postgres", User: url.UserPassword(containerDBUser, password),
		Host: net.JoinHostPort("127.0.0.1", port), Path: containerDBName,
		RawQuery: "sslmode=disable&connect_timeout=5",
	}
	return u.String()
}

func randomPassword() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// closeContainer removes the PostgreSQL container behind a database from
// StartPostgresContainer, with its volumes; for any other database it does
// nothing. Database.Close calls it after closing the pool.
func (d *Database) closeContainer() error {
	v, ok := containerDatabases.LoadAndDelete(d)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerCleanupTimeout)
	defer cancel()
	pg := v.(*tcpostgres.PostgresContainer)
	if err := pg.Terminate(ctx, testcontainers.StopTimeout(containerStopGrace)); err != nil {
		return fmt.Errorf("remove PostgreSQL container %s: %v: remove it with docker rm -fv %s", pg.GetContainerID(), oneLine(err.Error()), pg.GetContainerID())
	}
	return nil
}

// ProvideOptions tunes ProvideDatabaseWith.
type ProvideOptions struct {
	// DBImage is the PostgreSQL image to start when no DSN is given
	// (default DefaultPostgresImage).
	DBImage string
	// Log receives one line for each fallback, with its reason. Nil
	// discards them.
	Log func(string)
}

// ProvideDatabaseWith gives a run its database, trying in order:
//
//  1. dsn, when given (OpenDatabase); its errors are final, since the
//     user asked for that database;
//  2. a PostgreSQL container (StartPostgresContainer with opts.DBImage),
//     when a Docker engine answers and the image is on the host;
//  3. a throwaway PostgreSQL from the local binaries (ProvideDatabase).
//
// Each fallback is reported to opts.Log in one line with its reason. When
// nothing works the error wraps ErrNoDatabase and names every reason. Close
// the Database in every case: it stops whatever was started.
func ProvideDatabaseWith(ctx context.Context, dsn string, opts ProvideOptions) (*Database, error) {
	if dsn != "" {
		return OpenDatabase(ctx, dsn)
	}
	image := opts.DBImage
	if image == "" {
		image = DefaultPostgresImage
	}
	db, errContainer := StartPostgresContainer(ctx, image)
	if errContainer == nil {
		return db, nil
	}
	if ctx.Err() != nil {
		return nil, errContainer
	}
	if opts.Log != nil {
		opts.Log("database: no PostgreSQL container, using the local PostgreSQL binaries: " + oneLine(errContainer.Error()))
	}
	db, err := ProvideDatabase(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("%w; nor a PostgreSQL container: %s", err, oneLine(errContainer.Error()))
	}
	return db, nil
}
