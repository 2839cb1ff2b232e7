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
	"os"
)

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
