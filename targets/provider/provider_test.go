package provider_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/testctx"
	"github.com/idemcheck/idemcheck/targets/provider"
)

func start(t *testing.T, o provider.Options) *provider.Server {
	t.Helper()
	s, err := provider.Start(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type answer struct {
	status   int
	charge   string
	replayed string
	err      error
}

func post(t *testing.T, c *http.Client, s *provider.Server, key, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/v1/charges", strings.NewReader(body))
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &v)
	return answer{status: resp.StatusCode, charge: v.ID, replayed: resp.Header.Get("Idempotent-Replayed")}
}

// A careful provider: a key replays its charge, another body under it is
// refused, a keyless call charges every time; every call is recorded.
func TestKeysReplayAndMismatchRefused(t *testing.T) {
	s := start(t, provider.Options{})
	c := &http.Client{}
	first := post(t, c, s, "k1", `{"amount":4000,"metadata":{"intent":"ic-x-1"}}`)
	require.NoError(t, first.err)
	assert.Equal(t, http.StatusOK, first.status)
	again := post(t, c, s, "k1", `{"metadata":{"intent":"ic-x-1"},"amount":4000}`)
	assert.Equal(t, http.StatusOK, again.status)
	assert.Equal(t, first.charge, again.charge, "the same key and parameters replay the charge")
	assert.Equal(t, "true", again.replayed)
	other := post(t, c, s, "k1", `{"amount":5000}`)
	assert.Equal(t, http.StatusBadRequest, other.status, "another body under a used key")
	n1 := post(t, c, s, "", `{"amount":4000}`)
	n2 := post(t, c, s, "", `{"amount":4000}`)
	assert.NotEqual(t, n1.charge, n2.charge, "no key: two charges")
	assert.Equal(t, 3, s.Charges())

	calls := s.Take()
	require.Len(t, calls, 5)
	for i, c := range calls {
		assert.Equal(t, i+1, c.Seq)
		assert.Equal(t, idemcheck.DefaultProviderEnv, c.Provider)
		assert.NotEmpty(t, c.Conn)
		assert.False(t, c.Start.After(c.End))
	}
	assert.True(t, calls[0].Created)
	assert.Equal(t, "k1", calls[0].Key)
	assert.True(t, calls[1].Replayed)
	assert.False(t, calls[1].Created)
	assert.False(t, calls[2].Created)
	assert.Equal(t, http.StatusBadRequest, calls[2].Status)
	assert.Empty(t, calls[3].Key)
	assert.True(t, calls[3].Created && calls[4].Created)
	assert.Empty(t, s.Take(), "taken calls are forgotten")

	// A reconciling target can read the charge a key created.
	resp, err := c.Get(s.URL() + "/v1/charges?key=k1")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(b), first.charge)
}

func TestMismatchStatusIsConfigurable(t *testing.T) {
	s := start(t, provider.Options{Name: "PAYMENTS_URL", MismatchStatus: http.StatusUnprocessableEntity})
	c := &http.Client{}
	post(t, c, s, "k", `{"amount":1}`)
	assert.Equal(t, http.StatusUnprocessableEntity, post(t, c, s, "k", `{"amount":2}`).status)
	assert.Equal(t, "PAYMENTS_URL", s.Take()[0].Provider)
}

// Each fault acts once, on the next call: the cut and the slow reply
// charge and leave the caller without an answer; the 5xx charges nothing.
// A retry with the same key finds the one charge.
func TestFaults(t *testing.T) {
	s := start(t, provider.Options{})
	c := &http.Client{}

	disarm := s.Arm(provider.Fault{Kind: provider.CutAfterCharge})
	cutA := post(t, c, s, "a", `{"amount":1}`)
	assert.Error(t, cutA.err, "the reply was cut")
	assert.True(t, disarm())
	retry := post(t, c, s, "a", `{"amount":1}`)
	assert.Equal(t, "true", retry.replayed, "the charge was made before the cut")

	disarm = s.Arm(provider.Fault{Kind: provider.ServerError})
	assert.Equal(t, http.StatusServiceUnavailable, post(t, c, s, "b", `{"amount":1}`).status)
	assert.True(t, disarm())
	assert.Empty(t, post(t, c, s, "b", `{"amount":1}`).replayed, "a 5xx charged nothing: the retry creates the charge")

	disarm = s.Arm(provider.Fault{Kind: provider.SlowReply, Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/charges", strings.NewReader(`{"amount":1}`))
	req.Header.Set("Idempotency-Key", "c")
	done := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	// The charge exists while the reply is held: a retry sees the replay.
	wait := testctx.UntilDeadline(t)
	for s.Charges() < 3 && wait.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, "true", post(t, c, s, "c", `{"amount":1}`).replayed)
	cancel()
	assert.Error(t, <-done, "the caller gave up on the slow reply")
	assert.True(t, disarm())
	assert.Equal(t, 3, s.Charges())

	// The slow call is recorded once its handler let go of it.
	var faults []string
	for len(faults) < 3 && wait.Err() == nil {
		for _, call := range s.Take() {
			if call.Fault != "" {
				faults = append(faults, call.Fault)
			}
		}
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, []string{"provider-cut-after-charge", "provider-5xx", "provider-slow:ms=3600000"}, faults)
}
