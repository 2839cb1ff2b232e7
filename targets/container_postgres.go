package targets

import (
	"cmp"
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

	"github.com/jackc/pgx/v5"
	"github.com/moby/moby/client"
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
var containerDatabases sync.Map // *Database -> *engineContainer

// StartPostgresContainer starts image (DefaultPostgresImage when empty) as
// the official postgres image is run (POSTGRES_USER, POSTGRES_PASSWORD,
// POSTGRES_DB), on host networking at a free loopback port, waits until it
// takes connections, and opens its database. Close the Database to remove
// the container; containers of runs that were killed are removed at the
// next start.
//
// The error wraps ErrNoDocker when no engine answers and ErrNoImage when
// the image is not on the Docker host, so a caller can fall back.
func StartPostgresContainer(ctx context.Context, image string) (*Database, error) {
	return startDBContainer(ctx, cmp.Or(image, DefaultPostgresImage), startPostgresContainer)
}

// startDBContainer starts a database container of image with start, at a
// free loopback port, trying another port when the one picked was taken
// meanwhile.
func startDBContainer(ctx context.Context, image string,
	start func(ctx context.Context, docker *client.Client, image string, port int) (*Database, error)) (*Database, error) {
	docker, err := dockerFor(ctx, image)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		port, err := pickPort()
		if err != nil {
			_ = docker.Close()
			return nil, fmt.Errorf("cannot find a free port on 127.0.0.1: %v", err)
		}
		// On success the container keeps the client, until closeContainer.
		db, err := start(ctx, docker, image, port)
		if err == nil {
			return db, nil
		}
		if !errors.Is(err, errPortTaken) || attempt == portRetries {
			_ = docker.Close()
			return nil, err
		}
	}
}

// openContainerDB opens the database of a container that is ready, and
// keeps the container with it, to be removed by Database.Close; when the
// database cannot be opened, the container is removed at once.
func openContainerDB(ctx context.Context, ctr *engineContainer, dsn string) (*Database, error) {
	db, err := OpenDatabase(ctx, dsn)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), containerCleanupTimeout)
		defer cancel()
		_ = ctr.remove(ctx, 0)
		return nil, err
	}
	db.Source = SourceContainer
	containerDatabases.Store(db, ctr)
	return db, nil
}

func startPostgresContainer(ctx context.Context, docker *client.Client, image string, port int) (*Database, error) {
	password, err := randomPassword()
	if err != nil {
		return nil, err
	}
	p := strconv.Itoa(port)
	// With host networking there are no port mappings: the server itself
	// must listen on the free port, and only on loopback. -c options work
	// with the official image as with the local one; PGPORT also steers the
	// official image's temporary init server. fsync=off: the database is
	// thrown away with the container, so surviving a crash of the machine
	// buys nothing.
	ctr, err := runContainer(ctx, docker, containerSpec{
		image: image,
		env: map[string]string{
			"POSTGRES_USER": containerDBUser, "POSTGRES_PASSWORD": password, "POSTGRES_DB": containerDBName,
			"PGPORT": p,
		},
		cmd:          []string{"postgres", "-c", "fsync=off", "-c", "listen_addresses=127.0.0.1", "-c", "port=" + p},
		ready:        sqlReady(containerDSN(password, port, "&connect_timeout=5")),
		readyTimeout: postgresReadyTimeout,
	})
	if err != nil {
		return nil, failedStart(ctr, fmt.Sprintf("PostgreSQL container %s on 127.0.0.1:%d", image, port), err)
	}
	return openContainerDB(ctx, ctr, containerDSN(password, port, ""))
}

// sqlReady is the readiness wait of a PostgreSQL container: connect to dsn
// and run SELECT 1 until that works. It gives up as soon as the container
// stops, as the server will never take a connection then.
func sqlReady(dsn string) func(context.Context, *engineContainer) error {
	return func(ctx context.Context, ctr *engineContainer) error {
		last := "no answer yet"
		for {
			if err := ctr.stopped(ctx, "it took connections"); err != nil && ctx.Err() == nil {
				return err
			}
			conn, err := pgx.Connect(ctx, dsn)
			if err == nil {
				_, err = conn.Exec(ctx, "SELECT 1")
				_ = conn.Close(ctx)
				if err == nil {
					return nil
				}
			}
			// pgx's errors name the user and the database, never the
			// password.
			last = err.Error()
			select {
			case <-ctx.Done():
				return fmt.Errorf("PostgreSQL took no connection within %s (last: %s)", postgresReadyTimeout, oneLine(last))
			case <-time.After(containerReadyPoll):
			}
		}
	}
}

// containerDSN is the DSN of a PostgreSQL container's database, on
// 127.0.0.1 where its server listens; extra is appended to its query.
func containerDSN(password string, port int, extra string) string {
	u := url.URL{
		Scheme: "postgres", User: url.UserPassword(containerDBUser, password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Path: containerDBName,
		RawQuery: "sslmode=disable" + extra,
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

// closeContainer removes the database container behind a database from
// StartPostgresContainer or StartMariaDBContainer, with its volumes; for any other database it does
// nothing. Database.Close calls it after closing the pool.
func (d *Database) closeContainer() error {
	v, ok := containerDatabases.LoadAndDelete(d)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerCleanupTimeout)
	defer cancel()
	ctr := v.(*engineContainer)
	defer ctr.docker.Close()
	if err := ctr.remove(ctx, containerStopGrace); err != nil {
		return fmt.Errorf("remove database container %s: %v: remove it with docker rm -fv %s", ctr.id, oneLine(err.Error()), ctr.id)
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
