package scenarios_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemcheck/idemcheck/scenarios"
)

// A fingerprint is the request's meaning: JSON member order and white
// space do not change it; the method, the path or a value does.
func TestFingerprintIsTheRequestsMeaning(t *testing.T) {
	fp := scenarios.Fingerprint("POST", "/orders", []byte(`{"a":1,"b":"x"}`))
	assert.Len(t, fp, 16)
	assert.Equal(t, fp, scenarios.Fingerprint("POST", "/orders", []byte("{ \"b\": \"x\",\n \"a\": 1 }")))
	for _, other := range []string{
		scenarios.Fingerprint("PUT", "/orders", []byte(`{"a":1,"b":"x"}`)),
		scenarios.Fingerprint("POST", "/payments", []byte(`{"a":1,"b":"x"}`)),
		scenarios.Fingerprint("POST", "/orders", []byte(`{"a":2,"b":"x"}`)),
	} {
		assert.NotEqual(t, fp, other)
	}
	// A body that is not JSON counts byte for byte.
	assert.NotEqual(t, scenarios.Fingerprint("POST", "/orders", []byte("a b")), scenarios.Fingerprint("POST", "/orders", []byte("a  b")))
}
