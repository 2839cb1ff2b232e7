package assert

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
)

func TestParseArrival(t *testing.T) {
	want := time.Date(2026, 12, 4, 16, 0, 0, 123456000, time.UTC)
	for _, v := range []string{"1796400000.123456", "1796400000123.456", "1796400000123456", "1796400000123456000", "2026-12-04T16:00:00.123456Z"} {
		got, err := ParseArrival(v)
		require.NoError(t, err, v)
		assert.WithinDuration(t, want, got, time.Microsecond, v)
	}
	for _, v := range []string{"", "soon", "-5", "12.x"} {
		_, err := ParseArrival(v)
		assert.Error(t, err, v)
	}
}

// A burst whose replies say when the target received each request: the
// proof states the arrival spread beside the release spread; without the
// header, it says arrival was not measured.
func TestBurstProofStatesTheArrivalTheTargetTold(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 16, 0, 0, 0, time.UTC)
	h := &idemcheck.History{Run: idemcheck.Run{Policy: idemcheck.IETF()}}
	h.Run.Policy.ArrivalHeader = "X-Received-At"
	for i, at := range []time.Duration{0, 40 * time.Microsecond, 300 * time.Microsecond} {
		hd := http.Header{}
		hd.Set("X-Received-At", t0.Add(at).Format(time.RFC3339Nano))
		h.Attempts = append(h.Attempts, idemcheck.Attempt{ID: i + 1, Check: "concurrent-burst", Burst: 1, Outcome: idemcheck.Replied, Status: 201, RespHeader: hd})
	}
	arr := arrivalProof(h, "concurrent-burst")
	assert.Equal(t, "arrived at the target (its X-Received-At, by its own clock) within median 300 us, max 300 us, the first two 40 us apart at the median, over 1 of 1 bursts", arr)
	proof, _ := burstProof(tightBursts(us(45)), nil, arr)
	assert.Contains(t, proof, "(as released; arrived at the target (its X-Received-At")
	assert.NotContains(t, proof, "not measured")

	h.Run.Policy.ArrivalHeader = ""
	assert.Empty(t, arrivalProof(h, "concurrent-burst"))
	h.Run.Policy.ArrivalHeader = "X-Other"
	assert.Contains(t, arrivalProof(h, "concurrent-burst"), "no burst had two replies carrying X-Other")
}
