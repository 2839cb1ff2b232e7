package runner

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck"
)

// A vegeta result becomes an attempt through the one fill a certification
// uses: a status is a reply, whatever vegeta's Error restates of it; no
// status is an attempt whose outcome is unknown; the body is kept only for
// a history, and secrets are hidden in what is kept.
func TestVegetaResultFillsAsTheHarnessClient(t *testing.T) {
	s := &session{Runner: &Runner{Redact: []string{"X-Token"}, Secrets: []string{"sekrit"}}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	replied := &vegeta.Result{Timestamp: at, Latency: time.Second, Code: 500, Error: "500 Internal Server Error",
		Headers: http.Header{"X-Token": {"t"}}, Body: []byte(`{"e":"sekrit"}`)}

	var a idemcheck.Attempt
	s.fill(&a, vegetaResult(replied, true))
	assert.Equal(t, idemcheck.Replied, a.Outcome)
	assert.Equal(t, 500, a.Status)
	assert.Empty(t, a.Error, "a status is no transport error")
	assert.Equal(t, at, a.Start)
	assert.Equal(t, at.Add(time.Second), a.End)
	assert.True(t, a.FirstByte.IsZero(), "vegeta times no first byte")
	assert.Equal(t, `{"e":"`+Redacted+`"}`, a.RespBody)
	assert.Equal(t, []string{Redacted}, a.RespHeader["X-Token"])

	a = idemcheck.Attempt{}
	s.fill(&a, vegetaResult(replied, false))
	assert.Equal(t, idemcheck.Replied, a.Outcome)
	assert.Empty(t, a.RespBody, "no body without a history")

	a = idemcheck.Attempt{}
	s.fill(&a, vegetaResult(&vegeta.Result{Timestamp: at, Latency: time.Second, Error: "Post http://x/?q=sekrit: EOF"}, true))
	assert.Equal(t, idemcheck.Unknown, a.Outcome, "vegeta does not say whether the request was written")
	assert.Zero(t, a.Status)
	assert.Equal(t, "Post http://x/?q="+Redacted+": EOF", a.Error)
}
