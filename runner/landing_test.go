package runner

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/scenarios"
)

func runLostReply(t *testing.T, base string) *idemcheck.History {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	r := &Runner{
		Endpoint: scenarios.Endpoint{Base: u, Method: "POST", Path: idemcheck.MustTemplate("/orders"),
			Body: idemcheck.MustTemplate(`{"customerId":"{{intent}}"}`)},
		Policy: idemcheck.IETF(),
	}
	h := &idemcheck.History{}
	require.NoError(t, r.Run(context.Background(), []scenarios.Scenario{scenarios.LostReply(2)}, h))
	return h
}

// cut-reply lands when the request was written and the reply began to
// arrive: each lost-reply round records one FaultLanded, on its first
// step, with the landing "reply".
func TestCutReplyRecordsItsLanding(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"orderId":"o-1"}`)
	}))
	defer srv.Close()
	h := runLostReply(t, srv.URL)
	require.Len(t, h.Intents, 2)
	require.Len(t, h.Events, 2, "one event per round: %+v", h.Events)
	for i, ev := range h.Events {
		assert.Equal(t, idemcheck.FaultLanded, ev.Kind)
		assert.Equal(t, idemcheck.LandedReply, ev.Landing)
		assert.Equal(t, faults.CutReply.String(), ev.Fault)
		assert.Equal(t, idemcheck.CheckLostReply, ev.Check)
		assert.Equal(t, h.Intents[i].ID, ev.Intent)
		assert.Equal(t, i+1, ev.Round)
		assert.Equal(t, 1, ev.Step)
		assert.False(t, ev.Time.IsZero())
	}
}

// A target that is not listening: the proxy accepts the connection and
// cannot reach the target, so no reply byte ever arrives. The cut never
// happened, and the history says so with FaultMissed.
func TestCutReplyOnADeadTargetIsMissed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	h := runLostReply(t, "http://"+addr)
	require.Len(t, h.Events, 2, "%+v", h.Events)
	for _, ev := range h.Events {
		assert.Equal(t, idemcheck.FaultMissed, ev.Kind)
		assert.Empty(t, ev.Landing)
		assert.Contains(t, ev.Detail, "no reply byte arrived")
		assert.Equal(t, 1, ev.Step)
	}
}

func TestDBMissedSaysWhatTheFaultWaitedFor(t *testing.T) {
	assert.Equal(t, "the target sent no COMMIT and no autocommitted write while the attempt ran", dbMissed(faults.DBCut("", 1)))
	assert.Contains(t, dbMissed(faults.DBHold("", 2)), "fewer than 2 effect writes")
	assert.Contains(t, dbMissed(faults.DBHold(scenarios.BeginPattern, 1)), "no statement matching")
	assert.Equal(t, "abc...", clip("abcdef", 3))
	assert.Equal(t, "a...", clip("aé", 2), "never half a rune")
	// A miss the target answered with a server error says so: its
	// database was never reached, which is not a handler that writes
	// nothing.
	assert.Equal(t, "; it answered 500 without one: it failed before it reached its database", failedFirst(500))
	assert.Empty(t, failedFirst(201))
	assert.Empty(t, failedFirst(409))
}
