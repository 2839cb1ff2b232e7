package history_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/history"
)

// A history written before plans carried their rules and fault flags, and
// before attempts named the links their faults acted on, reads as it
// always meant: the fault checks of then break the target on purpose, and
// a fault named "db-..." acted on the database link. A newer history's own
// word stands, and what reads writes back to the same.
func TestOlderHistoriesReadAsTheyMeant(t *testing.T) {
	old := strings.Join([]string{
		`{"run":{"seed":1,"checks":[{"name":"crash-lease"},{"name":"lost-reply"},{"name":"failed-attempt","skip":"needs control"}]}}`,
		`{"attempt":{"id":1,"check":"crash-lease","fault":"kill-at-commit+db-hold:nth=1"}}`,
		`{"attempt":{"id":2,"check":"lost-reply","fault":"cut-reply"}}`,
		`{"attempt":{"id":3,"check":"restart-replay","fault":"kill-after-reply"}}`,
		`{"attempt":{"id":4,"check":"crash-after-commit","fault":"kill-after-commit+hold-reply+db-hold:match=x,nth=1"}}`,
		`{"attempt":{"id":5,"check":"lost-reply"}}`,
		`{"attempt":{"id":6,"check":"lease-fencing","fault":"db-hold:match=(?i)^\\s*(BEGIN|START\\s+TRANSACTION)\\b,nth=1"}}`,
	}, "\n")
	newer := strings.Join([]string{
		`{"run":{"seed":1,"checks":[{"name":"crash-lease","rule":"R"},{"name":"made-up","rule":"M","faults":true}]}}`,
		`{"attempt":{"id":1,"check":"crash-lease","fault":"db-cut:nth=1","fault_links":["client"]}}`,
	}, "\n")
	read := func(s string) *idemcheck.History {
		t.Helper()
		hs, err := history.ReadAll(strings.NewReader(s), "h.jsonl")
		if err != nil || len(hs) != 1 {
			t.Fatalf("read: %v (%d histories)", err, len(hs))
		}
		return hs[0]
	}

	h := read(old)
	var faulted []string
	for _, pc := range h.Run.Checks {
		if pc.Rule != "" {
			t.Errorf("%s: no rule was recorded, got %q", pc.Name, pc.Rule)
		}
		if pc.Faults {
			faulted = append(faulted, pc.Name)
		}
	}
	if want := []string{"crash-lease", "failed-attempt"}; !slices.Equal(faulted, want) {
		t.Errorf("fault checks of an older plan: got %v, want %v", faulted, want)
	}
	wantLinks := [][]string{{idemcheck.LinkDB}, {idemcheck.LinkClient}, nil, {idemcheck.LinkClient, idemcheck.LinkDB}, nil, {idemcheck.LinkDB}}
	for i, a := range h.Attempts {
		if !slices.Equal(a.FaultLinks, wantLinks[i]) {
			t.Errorf("attempt %d (%q): links %v, want %v", a.ID, a.Fault, a.FaultLinks, wantLinks[i])
		}
	}
	if !h.Attempts[0].FaultOn(idemcheck.LinkDB) || h.Attempts[1].FaultOn(idemcheck.LinkDB) || h.Attempts[2].FaultOn(idemcheck.LinkClient) {
		t.Error("FaultOn disagrees with the links")
	}

	n := read(newer)
	if n.Run.Checks[0].Faults || !n.Run.Checks[1].Faults {
		t.Errorf("a plan that records its rules keeps its own fault flags: %+v", n.Run.Checks)
	}
	if !slices.Equal(n.Attempts[0].FaultLinks, []string{idemcheck.LinkClient}) {
		t.Errorf("recorded links are kept as recorded: %v", n.Attempts[0].FaultLinks)
	}

	// What reads writes back, and reads again the same.
	for _, h := range []*idemcheck.History{h, n} {
		var b bytes.Buffer
		if err := history.Write(&b, h); err != nil {
			t.Fatal(err)
		}
		again := read(b.String())
		for i := range h.Run.Checks {
			if again.Run.Checks[i] != h.Run.Checks[i] {
				t.Errorf("plan changed on the way back: %+v, then %+v", h.Run.Checks[i], again.Run.Checks[i])
			}
		}
		for i := range h.Attempts {
			if !slices.Equal(again.Attempts[i].FaultLinks, h.Attempts[i].FaultLinks) {
				t.Errorf("attempt %d's links changed on the way back", h.Attempts[i].ID)
			}
		}
	}
}
