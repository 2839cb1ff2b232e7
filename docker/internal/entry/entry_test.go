package entry

import (
	"slices"
	"testing"
)

func TestServerCommand(t *testing.T) {
	cases := []struct {
		args    []string
		options []string
		server  bool
	}{
		{nil, nil, true},
		{[]string{"postgres"}, []string{}, true},
		// What the testcontainers modules pass.
		{[]string{"postgres", "-c", "fsync=off"}, []string{"-c", "fsync=off"}, true},
		{[]string{"mysqld", "--port=3307"}, []string{"--port=3307"}, true},
		{[]string{"-c", "port=5433"}, []string{"-c", "port=5433"}, true},
		{[]string{"psql", "-l"}, nil, false},
		{[]string{"mariadb", "-e", "select 1"}, nil, false},
	}
	for _, c := range cases {
		options, server := ServerCommand(c.args, "postgres", "mariadbd", "mysqld")
		if server != c.server || (server && !slices.Equal(options, c.options)) {
			t.Errorf("ServerCommand(%q) = %q, %v; want %q, %v", c.args, options, server, c.options, c.server)
		}
	}
}
