// Package userfile holds what every reader of a file the user names
// (a suite, a policy, an OpenAPI description, a certificate, a report's
// folder) needs alike: an error that does not say the file's name twice,
// and a YAML tree written out as JSON. It imports only the standard
// library.
package userfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Limits of the files a user names, far above any real one, so that a
// wrong path (/dev/zero, a disk image, a log) ends at once with a usage
// error instead of filling memory.
const (
	// MaxPolicy bounds a policy file.
	MaxPolicy = 1 << 20
	// MaxSuite bounds a suite file.
	MaxSuite = 16 << 20
	// MaxPEM bounds a certificate or key file (--cacert, --cert, --key).
	MaxPEM = 1 << 20
)

// TooLargeError is a file larger than its limit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("larger than %s, which no such file needs: is it the right file?", size(e.Limit))
}

func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Read reads the file at path, at most limit bytes of it: a longer one
// (or an endless one, such as /dev/zero) is a *TooLargeError after
// limit+1 bytes. Its errors carry no path: the caller's message names the
// file and its flag.
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Cause(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, Cause(err)
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return b, nil
}

// Cause drops the path from an error of the os package, for a message
// that names the file itself ("--cacert ca.pem cannot be read: no such
// file or directory"); any other error is returned as it is.
func Cause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// JSON writes a tree decoded from YAML as JSON: mappings whose keys are
// not all strings (map[any]any) become objects keyed by each key's text.
func JSON(tree any) ([]byte, error) { return json.Marshal(jsonable(tree)) }

func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = jsonable(x)
		}
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case []any:
		for i, x := range t {
			t[i] = jsonable(x)
		}
	}
	return v
}
