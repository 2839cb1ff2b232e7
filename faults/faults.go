// Package faults injects network faults between the harness and a target.
//
// A fault is a value: a stable name, the link it acts on (the client link
// between the harness and the target, or the database link between the
// target and its database) and parameters. A Link puts an in-process
// toxiproxy in front of one upstream and gives each fault its own proxy, so
// the harness chooses per attempt whether it goes through clean or faulted
// traffic simply by dialing a different address.
package faults

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Links a fault can act on.
const (
	// LinkClient is the link between the harness and the target.
	LinkClient = "client"
	// LinkDB is the link between the target and its database.
	LinkDB = "db"
)

// Fault names a fault and where it acts. The zero value, None, is no fault.
// Faults are compared by name and parameters (see String), not with ==,
// because Params is a map.
type Fault struct {
	Name   string
	Link   string
	Params map[string]string
}

// None is clean traffic.
var None = Fault{}

// CutReply lets the request reach the server whole and cuts the reply after
// its first byte, so the server has already committed when the client sees
// its connection end: the "lost reply" case that Idempotency-Key exists for.
// The client receives exactly one reply byte and then end of stream, and,
// because one byte did arrive, even a net/http Transport does not resend.
//
// It cuts at the first byte the server writes, so a server that flushes its
// headers (or a 100 Continue) before it commits is cut before committing;
// the harness proves the commit from the server's own effect count, not from
// the cut.
var CutReply = Fault{Name: "cut-reply", Link: LinkClient}

// IsNone reports whether f is clean traffic.
func (f Fault) IsNone() bool { return f.Name == "" }

// String is the fault's canonical form: its name followed by its parameters
// in sorted order, for example "cut-reply" or "latency(ms=200)". Two faults
// with the same String share a proxy.
func (f Fault) String() string {
	if f.IsNone() {
		return "none"
	}
	if len(f.Params) == 0 {
		return f.Name
	}
	var b strings.Builder
	b.WriteString(f.Name + "(")
	for i, k := range slices.Sorted(maps.Keys(f.Params)) {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(k + "=" + f.Params[k])
	}
	b.WriteString(")")
	return b.String()
}

// toxic is the JSON toxiproxy's AddToxicJson reads.
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// kind is a registered fault: its link and how to turn its parameters into
// toxics, all added before the fault's proxy accepts its first connection.
type kind struct {
	fault  Fault
	toxics func(params map[string]string) ([]toxic, error)
}

// registry holds the known faults. It is unexported on purpose: the set of
// faults is part of idemcheck's stable vocabulary, not a plug-in point.
var registry = map[string]kind{
	CutReply.Name: {
		fault: CutReply,
		toxics: func(params map[string]string) ([]toxic, error) {
			if err := noParams(params); err != nil {
				return nil, err
			}
			// limit_data passes the first byte of the reply, then closes
			// both sides. Measured (mechanics.md): exactly one commit per
			// send, on fresh and pooled connections, never resent. With
			// bytes 0 a pooled net/http connection would see no reply byte
			// and its Transport would resend the request.
			return []toxic{{
				Name: "cut-reply", Type: "limit_data", Stream: "downstream", Toxicity: 1,
				Attributes: map[string]any{"bytes": 1},
			}}, nil
		},
	},
}

func noParams(params map[string]string) error {
	if len(params) > 0 {
		return fmt.Errorf("takes no parameters, got %s", strings.Join(slices.Sorted(maps.Keys(params)), ", "))
	}
	return nil
}

// Names lists the names Parse accepts, sorted; "none" is clean traffic.
func Names() []string {
	return slices.Sorted(func(yield func(string) bool) {
		if !yield("none") {
			return
		}
		for name := range registry {
			if !yield(name) {
				return
			}
		}
	})
}

// Parse returns the fault with the given stable name; "none" is None. An
// unknown name is an error that lists the known ones.
func Parse(name string) (Fault, error) {
	if name == "none" {
		return None, nil
	}
	k, ok := registry[name]
	if !ok {
		return Fault{}, fmt.Errorf("faults: unknown fault %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return k.fault, nil
}

// toxicsFor validates f and returns the toxics its proxy needs.
func toxicsFor(f Fault) ([]toxic, error) {
	k, ok := registry[f.Name]
	if !ok {
		return nil, fmt.Errorf("faults: unknown fault %q (known: %s)", f.Name, strings.Join(Names(), ", "))
	}
	if f.Link != "" && f.Link != k.fault.Link {
		return nil, fmt.Errorf("faults: %s acts on the %s link, not %q", f.Name, k.fault.Link, f.Link)
	}
	ts, err := k.toxics(f.Params)
	if err != nil {
		return nil, fmt.Errorf("faults: %s: %w", f.Name, err)
	}
	return ts, nil
}
