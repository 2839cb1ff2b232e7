// Package entry holds what the entry points of idemcheck's database images
// (docker/pg-entrypoint, docker/mariadb-entrypoint) share: telling a
// command that starts the server from one that does not, and handing the
// server's folders to its user before switching to it.
package entry

import "strings"

// ServerCommand reports whether args start the server, and returns the
// options to pass it: no arguments, options alone ("-c x=y",
// "--port=3307") and one of the server's names followed by options
// ("postgres -c x=y", "mariadbd --port=3307") all do. Anything else is
// another command to run instead.
func ServerCommand(args []string, names ...string) (options []string, server bool) {
	switch {
	case len(args) == 0:
		return nil, true
	case strings.HasPrefix(args[0], "-"):
		return args, true
	}
	for _, n := range names {
		if args[0] == n {
			return args[1:], true
		}
	}
	return nil, false
}
