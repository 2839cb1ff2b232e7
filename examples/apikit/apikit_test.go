package apikit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type name string

var list = Variants[name, int]{
	{Name: "reference", Impl: 0},
	{Name: "buggy", Check: "concurrent-burst", Anomaly: "duplicate-effect", Impl: 1},
}

func TestVariants(t *testing.T) {
	assert.Equal(t, []name{"reference", "buggy"}, list.Names())

	n, err := list.Parse("app", "buggy")
	require.NoError(t, err)
	assert.Equal(t, name("buggy"), n)
	_, err = list.Parse("app", "nope")
	assert.EqualError(t, err, `app: unknown variant "nope" (known: reference, buggy)`)

	check, anomaly := list.Expectation("buggy")
	assert.Equal(t, [2]string{"concurrent-burst", "duplicate-effect"}, [2]string{check, anomaly})
	check, anomaly = list.Expectation("reference")
	assert.Equal(t, [2]string{"", ""}, [2]string{check, anomaly})
	check, anomaly = list.Expectation("nope")
	assert.Equal(t, [2]string{"", ""}, [2]string{check, anomaly})

	assert.Equal(t, 0, list.Must("app", "").Impl, "no name: the reference")
	assert.Equal(t, 1, list.Must("app", "buggy").Impl)
	assert.PanicsWithError(t, `app: unknown variant "nope" (known: reference, buggy)`, func() { list.Must("app", "nope") })
}

func TestWriteProblem(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteProblem(rec, http.StatusConflict, "in progress")
	assert.Equal(t, http.StatusConflict, rec.Code)
	assert.Equal(t, ProblemContentType, rec.Header().Get("Content-Type"))
	var p map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
	assert.Equal(t, map[string]any{"type": "about:blank", "title": "Conflict", "status": 409.0, "detail": "in progress"}, p)
}

func TestHealthz(t *testing.T) {
	rec := httptest.NewRecorder()
	Healthz(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "ok\n", rec.Body.String())
}
