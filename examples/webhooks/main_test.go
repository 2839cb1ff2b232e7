package webhooks_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// Every test gets a fresh database on one throwaway PostgreSQL server.
func TestMain(m *testing.M) { pgtest.Main(m) }
