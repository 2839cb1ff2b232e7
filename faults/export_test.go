package faults

import "testing"

// testDSN gives a test a fresh database (pgtest.DSN). It is set by
// TestMain in main_test.go: pgtest reaches PostgreSQL through targets,
// which imports faults, so only the external test package may import it.
var testDSN func(testing.TB) string

// UseDatabases sets where the package's tests get their databases.
func UseDatabases(dsn func(testing.TB) string) { testDSN = dsn }

// testMySQLDSN gives a test a fresh MariaDB database (mysqltest.DSN), a
// mysql:// URL; set by TestMain as testDSN is.
var testMySQLDSN func(testing.TB) string

// UseMySQL sets where the package's tests get their MariaDB databases.
func UseMySQL(dsn func(testing.TB) string) { testMySQLDSN = dsn }
