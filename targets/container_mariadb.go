package targets

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/moby/moby/client"
)

// DefaultMariaDBImage is the MariaDB image used for a MySQL-family target
// when none is named: the one make images builds from this machine's
// mariadbd, so it needs no registry. Any image that behaves like the
// official mariadb image works too.
const DefaultMariaDBImage = "idemcheck/mariadb:local"

// StartMariaDBContainer starts image (DefaultMariaDBImage when empty) as
// the official mariadb image is run (MARIADB_ROOT_PASSWORD, MARIADB_USER,
// MARIADB_PASSWORD, MARIADB_DATABASE), on host networking at a free
// loopback port, waits until it takes connections, and opens its database
// as that user. Close the Database to remove the container; containers of
// runs that were killed are removed at the next start.
//
// The error wraps ErrNoDocker when no engine answers and ErrNoImage when
// the image is not on the Docker host, so a caller can fall back.
func StartMariaDBContainer(ctx context.Context, image string) (*Database, error) {
	return startDBContainer(ctx, cmp.Or(image, DefaultMariaDBImage), startMariaDBContainer)
}

func startMariaDBContainer(ctx context.Context, docker *client.Client, image string, port int) (*Database, error) {
	password, err := randomPassword()
	if err != nil {
		return nil, err
	}
	rootPassword, err := randomPassword()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	urlDSN, goDSN := MySQLDSNs(containerDBUser, password, addr, containerDBName)
	// With host networking there are no port mappings: the server itself
	// must listen on the free port, and only on loopback. The options are
	// the local MariaDB's (StartLocalMariaDB): nothing of a throwaway
	// server need survive a crash. They work with the official image too.
	ctr, err := runContainer(ctx, docker, containerSpec{
		image: image,
		env: map[string]string{
			"MARIADB_ROOT_PASSWORD": rootPassword, "MARIADB_USER": containerDBUser, "MARIADB_PASSWORD": password,
			"MARIADB_DATABASE": containerDBName,
		},
		cmd: []string{"mariadbd", "--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--skip-name-resolve",
			"--skip-log-bin", "--innodb-buffer-pool-size=32M", "--innodb-flush-log-at-trx-commit=0",
			"--innodb-doublewrite=0", "--max-connections=300"},
		ready:        mysqlReady(goDSN),
		readyTimeout: postgresReadyTimeout,
	})
	if err != nil {
		return nil, failedStart(ctr, fmt.Sprintf("MariaDB container %s on %s", image, addr), err)
	}
	return openContainerDB(ctx, ctr, urlDSN)
}

// mysqlReady is the readiness wait of a MariaDB container: connect to dsn
// (the Go driver's form) and ping until that works. It gives up as soon as
// the container stops, as the server will never take a connection then.
func mysqlReady(dsn string) func(context.Context, *engineContainer) error {
	return func(ctx context.Context, ctr *engineContainer) error {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return err
		}
		cfg.Timeout = 5 * time.Second
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return err
		}
		db := sql.OpenDB(conn)
		defer db.Close()
		last := "no answer yet"
		for {
			if err := ctr.stopped(ctx, "it took connections"); err != nil && ctx.Err() == nil {
				return err
			}
			err := db.PingContext(ctx)
			if err == nil {
				return nil
			}
			// The driver's errors name the user, never the password.
			last = err.Error()
			select {
			case <-ctx.Done():
				return fmt.Errorf("MariaDB took no connection within %s (last: %s)", postgresReadyTimeout, oneLine(last))
			case <-time.After(containerReadyPoll):
			}
		}
	}
}

// ProvideMySQLDatabaseWith is ProvideDatabaseWith for the MySQL family:
// dsn when given; else a MariaDB container (StartMariaDBContainer with
// opts.DBImage), when an engine answers and the image is on the host;
// else a throwaway MariaDB from the local binaries (ProvideMySQLDatabase).
// Each fallback is reported to opts.Log in one line with its reason.
func ProvideMySQLDatabaseWith(ctx context.Context, dsn string, opts ProvideOptions) (*Database, error) {
	if dsn != "" {
		return OpenDatabase(ctx, dsn)
	}
	db, errContainer := StartMariaDBContainer(ctx, opts.DBImage)
	if errContainer == nil {
		return db, nil
	}
	if ctx.Err() != nil {
		return nil, errContainer
	}
	if opts.Log != nil {
		opts.Log("database: no MariaDB container, using the local MariaDB binaries: " + oneLine(errContainer.Error()))
	}
	db, err := ProvideMySQLDatabase(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("%w; nor a MariaDB container: %s", err, oneLine(errContainer.Error()))
	}
	return db, nil
}

// MySQLFamily reports whether a target idemcheck starts runs on a database
// of the MySQL family: the engine says so (EngineMySQL), or the DSN it is
// handed is a MySQL one.
func MySQLFamily(engine, dsn string) bool {
	return engine == EngineMySQL || (dsn != "" && DSNEngine(dsn) == EngineMySQL)
}
