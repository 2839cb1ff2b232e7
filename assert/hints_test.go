package assert

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A replay marker says yes in the forms middlewares use, in any case; any
// other value, the empty one included, says no.
func TestHeaderTrue(t *testing.T) {
	for _, v := range []string{"true", "TRUE", " True ", "?1", "1", "yes", "Yes"} {
		assert.True(t, headerTrue(v), "%q", v)
	}
	for _, v := range []string{"", "false", "?0", "0", "no", "replayed", "truthy"} {
		assert.False(t, headerTrue(v), "%q", v)
	}
}
