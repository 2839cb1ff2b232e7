// Package zoo certifies every example API, the references and each variant
// with one classic bug, and lays the verdicts out as a detection matrix:
// what idemcheck catches, and what it flags wrongly. `make zoo` prints the
// matrix; the package's test asserts it.
package zoo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/examples/ordersmysql"
	"github.com/idemcheck/idemcheck/examples/webhooks"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// Entry is one API of the zoo.
type Entry struct {
	App     string // "orders", "ordersmysql" or "webhooks"
	Variant string
	// Check and Anomaly are what must catch the variant's bug; empty for a
	// reference, which must show no anomaly at all.
	Check, Anomaly string
}

// Name is "app/variant".
func (e Entry) Name() string { return e.App + "/" + e.Variant }

// Args are the flags that start the entry's binary: its variant and, for
// orders, the zoo's short lease.
func (e Entry) Args() string {
	args := "-variant " + e.Variant
	if e.App == "orders" {
		args += " -lease " + Lease.String()
	}
	return args
}

// Lookup returns the entry of app's variant.
func Lookup(app, variant string) (Entry, bool) {
	for _, e := range Entries() {
		if e.App == app && e.Variant == variant {
			return e, true
		}
	}
	return Entry{}, false
}

// Reference reports whether the entry carries no bug.
func (e Entry) Reference() bool { return e.Check == "" }

// Entries lists the zoo: the orders API and the webhook consumer, each
// reference first, then its variants.
func Entries() []Entry {
	var out []Entry
	for _, v := range orders.Variants() {
		c, a := orders.Expectation(v)
		out = append(out, Entry{App: "orders", Variant: string(v), Check: c, Anomaly: a})
	}
	for _, v := range webhooks.Variants() {
		c, a := webhooks.Expectation(v)
		out = append(out, Entry{App: "webhooks", Variant: string(v), Check: c, Anomaly: a})
	}
	// The orders API on MariaDB, on a throwaway MariaDB of its own: the
	// checks that fault the database link are skipped there.
	out = append(out, Entry{App: "ordersmysql", Variant: ordersmysql.Reference},
		Entry{App: "ordersmysql", Variant: ordersmysql.CheckThenInsert, Check: idemcheck.CheckConcurrentBurst, Anomaly: string(idemcheck.DuplicateEffect)})
	return out
}

// Lease is the lease the zoo's targets run with, short so that the fault
// checks wait little.
const Lease = time.Second

// Bins holds the example binaries, built once.
type Bins struct{ Dir string }

// BuildTemp compiles the example APIs of the module the working folder is
// in (ModuleRoot) into a fresh temporary folder; Remove deletes it.
func BuildTemp(ctx context.Context) (*Bins, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "idemcheck-zoo-bins-")
	if err != nil {
		return nil, err
	}
	b, err := Build(ctx, root, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return b, nil
}

// Remove deletes the binaries' folder.
func (b *Bins) Remove() error { return os.RemoveAll(b.Dir) }

// Build compiles the example APIs into dir (go build), from the module's
// root folder root.
func Build(ctx context.Context, root, dir string) (*Bins, error) {
	for _, app := range []string{"orders", "webhooks", "ordersmysql"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, app), "./examples/"+app+"/cmd/"+app)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s: %v: %s", app, err, strings.TrimSpace(string(out)))
		}
	}
	return &Bins{Dir: dir}, nil
}

// Config is how an entry is certified: which checks, at what size.
type Config struct {
	Checks  []string // empty: every check
	Options scenarios.Options
	// DSN is the database server to create the entry's database on; empty
	// starts a throwaway one per entry. A MySQL-family entry
	// (ordersmysql) always starts a throwaway MariaDB.
	DSN  string
	Logs io.Writer
}

// Certify starts the entry as a process target (two instances behind a
// round-robin balancer, as a deployment with replicas) on its own
// database, with a payment provider double for the orders API, and
// certifies it.
func (b *Bins) Certify(ctx context.Context, e Entry, c Config) (*certify.Result, error) {
	command := filepath.Join(b.Dir, e.App) + " " + e.Args()
	o := targets.ProcessOptions{Command: command, Instances: 2, DSN: c.DSN, Logs: c.Logs}
	if e.App == "ordersmysql" {
		o.DSN, o.Engine = "", targets.EngineMySQL
	}
	if e.App == "orders" {
		// The orders API charges a payment provider when given one: the
		// zoo serves it a double, whose calls every check judges too.
		o.Providers = []string{orders.ProviderEnv}
	}
	pt, err := targets.StartProcessTarget(ctx, o)
	if err != nil {
		return nil, err
	}
	defer pt.Close()
	cfg := EndpointConfig(e.App, pt)
	cfg.Name = e.Name()
	cfg.Checks = c.Checks
	cfg.Options = c.Options
	return certify.Run(ctx, cfg)
}

// EndpointConfig is how idemcheck is told about each example ("orders" or
// "webhooks") started as pt: its request, its effect query and its contract.
func EndpointConfig(app string, pt *targets.ProcessTarget) certify.Config {
	base := pt.URL
	cfg := certify.Config{
		Powers: pt.Powers(), Replicas: pt.Replicas(), DB: pt.DB.Pool, DBName: "the " + app + " database",
		EffectArgs: []idemcheck.Template{idemcheck.MustTemplate("{{intent}}")},
	}
	if pt.DB.SQL != nil {
		cfg.EffectDB = pt.DB.SQL
	}
	cfg.Endpoint.Base = base
	cfg.Endpoint.Method = "POST"
	cfg.Endpoint.Tenants = []scenarios.Header{
		{Name: "Authorization", Value: idemcheck.MustTemplate("Bearer zoo-client-a")},
		{Name: "Authorization", Value: idemcheck.MustTemplate("Bearer zoo-client-b")},
	}
	switch app {
	case "orders":
		cfg.Policy = idemcheck.IETF()
		cfg.Policy.ReplayHeader = "Idempotent-Replayed"
		cfg.Policy.Lease = Lease
		cfg.Endpoint.Path = idemcheck.MustTemplate("/orders")
		cfg.Endpoint.Body = idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":4000}`)
		failing := idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":402}`)
		cfg.Endpoint.FailingBody = &failing
		cfg.Endpoint.Other = &scenarios.OtherEndpoint{Method: "POST", Path: idemcheck.MustTemplate("/payments")}
		cfg.EffectSQL = "SELECT count(*) FROM orders WHERE customer_id = $1"
	case "ordersmysql":
		cfg.Policy = idemcheck.IETF()
		cfg.Policy.ReplayHeader = "Idempotent-Replayed"
		cfg.Endpoint.Path = idemcheck.MustTemplate("/orders")
		cfg.Endpoint.Body = idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":4000}`)
		cfg.EffectSQL = "SELECT count(*) FROM orders WHERE customer_id = ?"
	case "webhooks":
		cfg.Policy = idemcheck.Webhook()
		cfg.Endpoint.Path = idemcheck.MustTemplate("/webhooks")
		cfg.Endpoint.Body = idemcheck.MustTemplate(`{"eventId":"{{key}}","type":"payment.succeeded","data":{"customerId":"{{intent}}","amountCents":500}}`)
		failing := idemcheck.MustTemplate(`{"eventId":"{{key}}","type":"payment.succeeded","data":{"customerId":"{{intent}}","amountCents":500,"failFirst":true}}`)
		cfg.Endpoint.FailingBody = &failing
		cfg.EffectSQL = "SELECT count(*) FROM ledger WHERE customer_id = $1"
	}
	return cfg
}

// Options are the zoo's scenario sizes: every check, smaller rounds, and a
// retry window longer than the short-ttl variant's key retention.
//
// Concurrent redeliveries come 32 at a time, as concurrent-burst's bursts
// do, since the zoo has only two rounds of them: measured on a loaded
// 2-core machine, a webhook consumer's check-then-insert race showed in
// 19-26 of 30 bursts of 8 (both rounds missed it in about one run in
// seven) and in 29 of 30 bursts of 32.
func Options() scenarios.Options {
	o := scenarios.Defaults
	o.BurstRounds, o.Rounds, o.FaultRounds = 3, 2, 2
	o.Redeliveries = 32
	o.RetryWindow = 2 * orders.ShortTTLRetention
	return o
}

// Row is one entry's verdict.
type Row struct {
	Entry Entry
	// Found are the anomaly kinds each check reported.
	Found map[string][]idemcheck.Kind
	// Skipped are the checks that did not apply, with why.
	Skipped map[string]string
	// Inconclusive are the checks whose scenario did not happen, with why.
	Inconclusive map[string]string
}

// NewRow reads a report.
func NewRow(e Entry, r idemcheck.Report) Row {
	row := Row{Entry: e, Found: map[string][]idemcheck.Kind{}, Skipped: map[string]string{}, Inconclusive: map[string]string{}}
	for _, c := range r.Checks {
		if c.Status == idemcheck.Skip {
			row.Skipped[c.Name] = c.Reason
		}
		if c.Status == idemcheck.Inconclusive {
			row.Inconclusive[c.Name] = c.Reason
		}
		for _, i := range c.Anomalies {
			k := r.Anomalies[i].Kind
			if !slices.Contains(row.Found[c.Name], k) {
				row.Found[c.Name] = append(row.Found[c.Name], k)
			}
		}
	}
	return row
}

// Caught reports whether the expected check found the expected anomaly
// (for a reference: whether nothing was found at all and every check that
// applied proved its scenario happened).
func (r Row) Caught() bool {
	if r.Entry.Reference() {
		return len(r.Found) == 0 && len(r.Inconclusive) == 0
	}
	return slices.Contains(r.Found[r.Entry.Check], idemcheck.Kind(r.Entry.Anomaly))
}

// WriteMatrix prints the detection matrix: one row per entry, one column
// per check; a cell holds the anomaly kinds found ("-" none, "skip" not
// applicable), the expected cell is marked with brackets, and the last
// column says whether the entry was caught (a reference: left clean).
func WriteMatrix(w io.Writer, rows []Row) {
	checks := scenarios.Names()
	short := func(c string) string {
		parts := strings.Split(c, "-")
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p[:min(4, len(p))])
		}
		return b.String()
	}
	fmt.Fprintf(w, "%-34s", "variant (expected check → anomaly)")
	for _, c := range checks {
		fmt.Fprintf(w, " %-9s", short(c))
	}
	fmt.Fprintf(w, " verdict\n")
	caught, total := 0, 0
	for _, r := range rows {
		fmt.Fprintf(w, "%-34s", r.Entry.Name())
		for _, c := range checks {
			cell := "-"
			if _, ok := r.Skipped[c]; ok {
				cell = "skip"
			}
			if _, ok := r.Inconclusive[c]; ok {
				cell = "inconcl"
			}
			if ks := r.Found[c]; len(ks) > 0 {
				var names []string
				for _, k := range ks {
					names = append(names, abbreviate(k))
				}
				sort.Strings(names)
				cell = strings.Join(names, ",")
			}
			if c == r.Entry.Check {
				cell = "[" + cell + "]"
			}
			fmt.Fprintf(w, " %-9s", cell)
		}
		verdict := "caught"
		switch {
		case r.Entry.Reference() && r.Caught():
			verdict = "clean"
		case r.Entry.Reference() && len(r.Found) == 0:
			verdict = "INCONCLUSIVE"
		case r.Entry.Reference():
			verdict = "FALSE ALARM"
		case !r.Caught():
			verdict = "MISSED"
		}
		total++
		if r.Caught() {
			caught++
		}
		fmt.Fprintf(w, " %s", verdict)
		if !r.Entry.Reference() {
			fmt.Fprintf(w, " (%s → %s)", r.Entry.Check, r.Entry.Anomaly)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\n%d of %d as expected. Columns:", caught, total)
	for _, c := range checks {
		fmt.Fprintf(w, " %s=%s", short(c), c)
	}
	fmt.Fprintf(w, ".\nCells: anomaly kinds found (")
	var legend []string
	for k, a := range abbreviations {
		legend = append(legend, a+"="+string(k))
	}
	sort.Strings(legend)
	fmt.Fprintf(w, "%s), - none, skip not applicable, [ ] the expected check.\n", strings.Join(legend, " "))
}

var abbreviations = map[idemcheck.Kind]string{
	idemcheck.DuplicateEffect: "dup", idemcheck.MultipleCreated: "multi", idemcheck.ReplayMismatch: "rmis",
	idemcheck.FreshResultOnReplay: "fresh", idemcheck.PayloadMismatchAccepted: "pacc", idemcheck.FalseMismatch: "fmis",
	idemcheck.CrossEndpointReplay: "xend", idemcheck.CrossTenantReplay: "xten", idemcheck.OverDeduplication: "odup",
	idemcheck.MissingKeyAccepted: "nokey", idemcheck.ServerErrorUnderRetry: "5xx", idemcheck.StuckKey: "stuck",
	idemcheck.LostEffect: "lost", idemcheck.UnexpectedStatus: "status", idemcheck.NeverAcknowledged: "noack",
	idemcheck.RejectedRequestSaved: "rsave", idemcheck.MalformedKeyAccepted: "mkey",
	idemcheck.ProviderDuplicateCharge: "pdup", idemcheck.ProviderCallWithoutKey: "pnokey",
}

func abbreviate(k idemcheck.Kind) string {
	if a, ok := abbreviations[k]; ok {
		return a
	}
	return string(k)
}

// ModuleRoot finds the folder holding go.mod, from the working folder up.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working folder: run from inside the idemcheck module")
		}
		dir = parent
	}
}
