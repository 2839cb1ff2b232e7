package userfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestCause(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "ca.pem")
	_, err := os.ReadFile(missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)
	assert.Equal(t, "no such file or directory", Cause(err).Error())
	assert.NotContains(t, Cause(err).Error(), missing)

	other := os.ErrDeadlineExceeded
	assert.Equal(t, other, Cause(other), "an error without a path is kept")
}

func TestJSON(t *testing.T) {
	var tree any
	require.NoError(t, yaml.Unmarshal([]byte("a: {b: [1, {c: x}]}\n1: one\ntrue: [yes]\n"), &tree))
	b, err := JSON(tree)
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":{"b":[1,{"c":"x"}]},"1":"one","true":["yes"]}`, string(b))

	require.NoError(t, yaml.Unmarshal([]byte("nested: {2: two}\n"), &tree))
	b, err = JSON(tree)
	require.NoError(t, err, "a mapping with a number key, nested, is an object")
	assert.JSONEq(t, `{"nested":{"2":"two"}}`, string(b))
}
