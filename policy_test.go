package idemcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestInProgress(t *testing.T) {
	p := IETF()
	if !p.InProgress(409) || p.InProgress(423) || p.InProgress(0) {
		t.Fatalf("IETF: 409 alone is in progress")
	}
	p.SetInProgress(409, 423)
	if !p.InProgress(409) || !p.InProgress(423) || p.InProgress(422) {
		t.Fatalf("409 and 423 are in progress, 422 is not")
	}
	if p.InProgressStatus != 409 || len(p.InProgressList()) != 2 {
		t.Fatalf("the first status is the main one: %+v", p)
	}
	p.SetInProgress(0)
	if p.InProgressStatus != 0 || p.InProgressStatuses != nil || p.InProgress(409) || p.InProgressList() != nil {
		t.Fatalf("0 means duplicates wait for the replay: %+v", p)
	}
	p.SetInProgress(423)
	if p.InProgressStatuses != nil || !p.InProgress(423) || p.InProgress(409) {
		t.Fatalf("one status leaves the list empty: %+v", p)
	}
	// A Go user who sets the fields directly gets the union.
	q := Policy{InProgressStatus: 409, InProgressStatuses: []int{423}}
	if !q.InProgress(409) || !q.InProgress(423) {
		t.Fatalf("InProgress reads both fields")
	}
}

func TestValidHeaderName(t *testing.T) {
	for _, ok := range []string{"Idempotency-Key", "X-Idempotency-Key", "idempotent_replayed", "a.b~c!#$%&'*+^`|"} {
		if !validHeaderName(ok) {
			t.Errorf("%q is a token", ok)
		}
	}
	for _, bad := range []string{"", "bad header", "Key:", "Key\t", "X(Key)", "Ключ", "a\"b", "a/b", "a\nb"} {
		if validHeaderName(bad) {
			t.Errorf("%q is not a token", bad)
		}
	}
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Policy)
		field string
		want  string
	}{
		{"replay header with a space", func(p *Policy) { p.ReplayHeader = "bad header" }, "replay_header", `replay_header "bad header" is not an HTTP header name`},
		{"key header with a colon", func(p *Policy) { p.KeyHeader = "Idempotency-Key:" }, "key_header", `key_header "Idempotency-Key:" is not an HTTP header name`},
		{"empty key header", func(p *Policy) { p.KeyHeader = "" }, "key_header", "key_header is empty"},
		{"status out of range", func(p *Policy) { p.MismatchStatus = 1000 }, "mismatch_status", "mismatch_status 1000 is not an HTTP status"},
		{"in-progress list out of range", func(p *Policy) { p.InProgressStatuses = []int{409, 99} }, "in_progress_statuses", "99 is not an HTTP status"},
		{"in-progress list holds a success", func(p *Policy) { p.InProgressStatuses = []int{409, 201} }, "in_progress_statuses", "201 is also a success status"},
		{"in-progress list without the main status", func(p *Policy) { p.InProgressStatuses = []int{423} }, "in_progress_statuses", "does not hold in_progress_status 409"},
		{"done states without a status pointer", func(p *Policy) { p.StatusDone = []string{"succeeded"} }, "status_pointer", "status_pointer is empty"},
		{"a status pointer without done states", func(p *Policy) { p.StatusPointer = "/status" }, "status_done", "status_done is empty"},
		{"a state both done and failed", func(p *Policy) {
			p.StatusPointer, p.StatusDone, p.StatusFailed = "/status", []string{"over"}, []string{"over"}
		}, "status_failed", `"over" is also in status_done`},
		{"a status pointer without accepted statuses", func(p *Policy) {
			p.StatusPointer, p.StatusDone, p.AcceptedStatuses = "/status", []string{"succeeded"}, nil
		}, "accepted_statuses", "accepted_statuses is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := IETF()
			c.edit(&p)
			err := p.Validate()
			var pe *PolicyError
			if !errors.As(err, &pe) {
				t.Fatalf("want a *PolicyError, got %v", err)
			}
			if pe.Field != c.field || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "policy: ") {
				t.Fatalf("got field %q, %q; want field %q and %q", pe.Field, err, c.field, c.want)
			}
		})
	}
	for name, p := range Presets {
		if err := p().Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
	}
	p := IETF()
	p.SetInProgress(409, 423)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Histories written before in_progress_statuses existed read the same, and
// a reader that knows only in_progress_status still finds the main status.
func TestPolicyJSONBothWays(t *testing.T) {
	var old Policy
	if err := json.Unmarshal([]byte(`{"key_header":"Idempotency-Key","created_statuses":[201],"in_progress_status":409,"mismatch_status":422}`), &old); err != nil {
		t.Fatal(err)
	}
	if !old.InProgress(409) || old.InProgressStatuses != nil {
		t.Fatalf("old policy: %+v", old)
	}
	p := IETF()
	p.SetInProgress(409, 423)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"in_progress_status":409`)) || !bytes.Contains(b, []byte(`"in_progress_statuses":[409,423]`)) {
		t.Fatalf("both fields are written: %s", b)
	}
	var oldReader struct {
		InProgressStatus int `json:"in_progress_status"`
	}
	if err := json.Unmarshal(b, &oldReader); err != nil || oldReader.InProgressStatus != 409 {
		t.Fatalf("an older reader sees %d (%v)", oldReader.InProgressStatus, err)
	}
	var back Policy
	if err := json.Unmarshal(b, &back); err != nil || !back.InProgress(423) {
		t.Fatalf("round trip: %+v (%v)", back, err)
	}
	b, _ = json.Marshal(IETF())
	if bytes.Contains(b, []byte("in_progress_statuses")) {
		t.Fatalf("a single status writes no list: %s", b)
	}
}
