package targets

import "testing"

// A label names the program that serves, whatever the shell does first: a
// Python service is typically started from its own folder.
func TestCommandName(t *testing.T) {
	for command, want := range map[string]string{
		"./bin/orders -variant x":                                      "orders",
		"VARIANT=memory exec gunicorn -w 2 -b 127.0.0.1:$PORT app:app": "gunicorn",
		"cd /srv/app && exec gunicorn -w 2 app:app":                    "gunicorn",
		"cd dj ; VARIANT=x python3 manage.py runserver":                "python3",
		"go run ./cmd/orders":                                          "orders",
		"cd":                                                           "cd",
		"":                                                             "target",
	} {
		if got := commandName(command); got != want {
			t.Errorf("commandName(%q) = %q, want %q", command, got, want)
		}
	}
}
