package faults_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/targets/mysqltest"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

func TestMain(m *testing.M) {
	faults.UseDatabases(pgtest.DSN)
	faults.UseMySQL(mysqltest.DSN)
	mysqltest.Use()
	pgtest.Main(m, mysqltest.Close)
}
