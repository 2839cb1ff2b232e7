package main

import (
	"regexp"

	"github.com/idemcheck/idemcheck"
)

// flagEnvRE matches what flag values expand: ${NAME}, and $${ for a
// literal ${. Any other $ is left alone ($1 in a body, a price "$5").
var flagEnvRE = regexp.MustCompile(`\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandFlag reads ${NAME} in a flag's value from the environment, as
// suite files do, so that a credential need not be spliced in by the shell
// (where 'Bearer $TOKEN' in single quotes would send the literal $TOKEN).
// It returns the values it put in, for redaction; an unset variable is a
// usage error naming the flag.
func expandFlag(flagName, v string, lookup func(string) (string, bool)) (string, []string, error) {
	var missing string
	var used []string
	out := flagEnvRE.ReplaceAllStringFunc(v, func(m string) string {
		if m == "$${" {
			return "${"
		}
		name := m[2 : len(m)-1]
		val, ok := lookup(name)
		if !ok && missing == "" {
			missing = name
		}
		if val != "" {
			used = append(used, val)
		}
		return val
	})
	if missing != "" {
		return "", nil, idemcheck.Usagef("%s: environment variable %s is not set: export it, or write $${%s} for a literal ${%s}", flagName, missing, missing, missing)
	}
	return out, used, nil
}

// expandFlags expands every value of a flag in place (see expandFlag).
func expandFlags(flagName string, vs []string, lookup func(string) (string, bool)) ([]string, error) {
	var secrets []string
	for i, v := range vs {
		out, used, err := expandFlag(flagName, v, lookup)
		if err != nil {
			return nil, err
		}
		vs[i] = out
		secrets = append(secrets, used...)
	}
	return secrets, nil
}
