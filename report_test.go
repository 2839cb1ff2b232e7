package idemcheck

import (
	"testing"
	"time"
)

// Stamp names the build, and the run's start unless the run gave its own.
func TestReportStamp(t *testing.T) {
	tool := Tool{Name: "idemcheck", Version: "v1.2.3"}
	started := time.Date(2026, 12, 1, 22, 0, 0, 123456789, time.FixedZone("CET", 3600))
	var r Report
	r.Stamp(tool, started)
	if r.Tool != tool {
		t.Errorf("tool %v, want %v", r.Tool, tool)
	}
	if want := time.Date(2026, 12, 1, 21, 0, 0, 123000000, time.UTC); !r.StartedAt.Equal(want) || r.StartedAt.Location() != time.UTC {
		t.Errorf("started at %v, want %v in UTC", r.StartedAt, want)
	}
	first := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r = Report{StartedAt: first}
	r.Stamp(tool, started)
	if !r.StartedAt.Equal(first) {
		t.Errorf("a start the run recorded is kept: got %v, want %v", r.StartedAt, first)
	}
}
