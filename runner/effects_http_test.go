package runner_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/runner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCountAt(t *testing.T) {
	for _, c := range []struct {
		body, ptr string
		want      int64
	}{
		{`{"data":[{},{}]}`, "/data", 2},
		{`{"data":[]}`, "/data", 0},
		{`[1,2,3]`, "", 3},
		{`{"meta":{"total":7}}`, "/meta/total", 7},
		{`{"a/b":{"c~d":[1]}}`, "/a~1b/c~0d", 1},
		{`{"pages":[{"items":[1,2]}]}`, "/pages/0/items", 2},
	} {
		n, err := runner.CountAt([]byte(c.body), c.ptr)
		require.NoError(t, err, c.body)
		assert.Equal(t, c.want, n, c.body)
	}
	for _, c := range []struct{ body, ptr, want string }{
		{`{"data":{}}`, "/data", "neither an array nor a number"},
		{`{"total":-1}`, "/total", "not a count"},
		{`{"total":1.5}`, "/total", "not a count"},
		{`{"data":[]}`, "/items", "nothing at /items"},
		{`<html>`, "/data", "not JSON"},
		{`{"data":"3"}`, "/data", "neither an array nor a number"},
	} {
		_, err := runner.CountAt([]byte(c.body), c.ptr)
		require.Error(t, err, c.body)
		assert.Contains(t, err.Error(), c.want)
	}
}
