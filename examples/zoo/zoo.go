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
	"github.com/idemcheck/idemcheck/examples/apikit"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/examples/ordersmysql"
	"github.com/idemcheck/idemcheck/examples/payments"
	"github.com/idemcheck/idemcheck/examples/webhooks"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// Entry is one API of the zoo.
type Entry struct {
	App     string // "orders", "ordersmysql", "webhooks" or "payments"
	Variant string
	// Check and Anomaly are what must catch the variant's bug; empty for a
	// reference, which must show no anomaly at all.
	Check, Anomaly string
	// Flags are more flags of the entry's binary, which put the variant in
	// another setting, apart from its idempotency logic: behind a rate
	// limiter ("-rate-limit 4"), or dying on a dropped database link
	// (ExitOnDBError, as a Node service whose pg client has no 'error'
	// listener does; a correct service with it still passes: its crashes
	// are robustness findings, Row.Robustness).
	Flags string
	// Instances is how many processes of the entry are started behind the
	// balancer; 0 means 2.
	Instances int
	// Inconclusive are the checks a reference's setting keeps from ever
	// happening (a rate limiter that admits one request of a client at a
	// time never lets two same-key attempts reach the handler together):
	// they must be inconclusive, with a reason, and never pass or fail.
	Inconclusive []string
	// Signed: the webhook consumer verifies every delivery's signature
	// (SigningSecret), and idemcheck signs each attempt, under Scheme.
	Signed bool
	// Scheme is a signed entry's signing scheme (scenarios.SignSchemes);
	// empty is standard-webhooks.
	Scheme string
	// Needs says what idemcheck must be able to do to the running entry
	// for Check to reach its bug (apikit.NeedsLink, apikit.NeedsProvider);
	// empty when a run by URL reaches it too. A run that could not, and
	// missed the bug, is neither a catch nor a miss (Row.Unreachable).
	Needs string
}

// Name is "app/variant" ("webhooks-signed/variant" for a consumer signed
// under standard-webhooks, "webhooks-signed-stripe/variant" under another
// scheme), and the entry's flags after it.
func (e Entry) Name() string {
	n := e.App + "/" + e.Variant
	switch {
	case e.Signed && e.Scheme != "":
		n = e.App + "-signed-" + e.Scheme + "/" + e.Variant
	case e.Signed:
		n = e.App + "-signed/" + e.Variant
	}
	if e.Flags != "" {
		n += " " + e.Flags
	}
	return n
}

// SigningSecret is the signed consumers' secret: a test value, the key
// "idemcheck zoo signing key" in base64 (the other schemes key their HMAC
// with the whole text).
const SigningSecret = "whsec_aWRlbWNoZWNrIHpvbyBzaWduaW5nIGtleQ=="

// SigningScheme is the entry's signing scheme, standard-webhooks when
// Scheme is empty.
func (e Entry) SigningScheme() string {
	if e.Scheme == "" {
		return scenarios.SignStandardWebhooks
	}
	return e.Scheme
}

// signedVariants are the webhook consumers the zoo also certifies signed:
// the reference, the event recorded after the work committed, the
// delivery id taken for the event id, and the signature checked after the
// work.
var signedVariants = []webhooks.Variant{webhooks.Reference, webhooks.CheckThenInsert, webhooks.DedupeDelivery, webhooks.SignedAfterWork}

// Args are the flags that start the entry's binary: its variant, for
// the orders APIs the zoo's short lease, and its own flags.
func (e Entry) Args() string {
	args := "-variant " + e.Variant
	if e.App == "orders" || e.App == "ordersmysql" {
		args += " -lease " + Lease.String()
	}
	if e.Flags != "" {
		args += " " + e.Flags
	}
	return args
}

// ExitOnDBError is the orders binary's flag that makes the process exit
// when a database connection fails under it.
const ExitOnDBError = "-exit-on-db-error"

// Lookup returns the entry of app's variant; app "webhooks-signed" names
// a signed consumer, "webhooks-signed-stripe" one signed under stripe.
func Lookup(app, variant string) (Entry, bool) { return LookupFlags(app, variant, "") }

// LookupFlags returns the entry of app's variant with flags.
func LookupFlags(app, variant, flags string) (Entry, bool) {
	name := app + "/" + variant
	if flags != "" {
		name += " " + flags
	}
	for _, e := range Entries() {
		if e.Name() == name {
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
		out = append(out, Entry{App: "orders", Variant: string(v), Check: c, Anomaly: a, Needs: orders.Needs(v)})
	}
	// Services that die on a dropped database link: the correct one must
	// pass (the crashes reported apart), and one that also keeps its keys
	// in memory loses them with the process, so the retry after the
	// restart executes again.
	out = append(out,
		Entry{App: "orders", Variant: string(orders.Reference), Flags: ExitOnDBError},
		Entry{App: "orders", Variant: string(orders.InMemoryKeyStore), Flags: ExitOnDBError,
			Check: idemcheck.CheckFailedAttempt, Anomaly: string(idemcheck.DuplicateEffect), Needs: apikit.NeedsLink},
	)
	for _, v := range webhooks.Variants() {
		if v == webhooks.SignedAfterWork {
			continue // its bug needs a signed consumer
		}
		c, a := webhooks.Expectation(v)
		out = append(out, Entry{App: "webhooks", Variant: string(v), Check: c, Anomaly: a, Needs: webhooks.Needs(v)})
	}
	for _, v := range signedVariants {
		c, a := webhooks.Expectation(v)
		out = append(out, Entry{App: "webhooks", Variant: string(v), Check: c, Anomaly: a, Needs: webhooks.Needs(v), Signed: true})
	}
	// The signed reference under every other preset idemcheck signs
	// with, each verified as its provider documents it.
	for _, s := range webhooks.Schemes() {
		if s != webhooks.StandardWebhooks {
			out = append(out, Entry{App: "webhooks", Variant: string(webhooks.Reference), Signed: true, Scheme: string(s)})
		}
	}
	// The orders API on MariaDB, on a throwaway MariaDB of its own,
	// reached through a database link that reads the MySQL protocol: every
	// check runs there as on PostgreSQL, those that fault the link
	// included, and check-then-insert's race is scheduled by the write
	// barrier.
	out = append(out, Entry{App: "ordersmysql", Variant: ordersmysql.Reference},
		Entry{App: "ordersmysql", Variant: ordersmysql.CheckThenInsert, Check: idemcheck.CheckConcurrentBurst, Anomaly: string(idemcheck.DuplicateEffect)},
		Entry{App: "ordersmysql", Variant: ordersmysql.NoFingerprint, Check: idemcheck.CheckPayloadMismatch, Anomaly: string(idemcheck.PayloadMismatchAccepted)},
		Entry{App: "ordersmysql", Variant: ordersmysql.SeparateKeyStore, Check: idemcheck.CheckCrashLease, Anomaly: string(idemcheck.DuplicateEffect)},
		Entry{App: "ordersmysql", Variant: ordersmysql.LeaseNoFencing, Check: idemcheck.CheckLeaseFencing, Anomaly: string(idemcheck.DuplicateEffect)})
	// The queue-backed payments API, answering 202 while a River worker
	// makes the payment later: certified with PaymentsSettle.
	for _, v := range payments.Variants() {
		c, a := payments.Expectation(v)
		out = append(out, Entry{App: "payments", Variant: string(v), Check: c, Anomaly: a})
	}
	return append(out, RateLimited()...)
}

// RateLimited are the orders API behind a rate limiter that refuses a
// client's requests beyond a number in flight with 429 and Retry-After: 1
// (examples/serve RateLimit), as staging endpoints often are.
//
// Behind a limit of one request in flight, started as one process, the
// reference can never have two same-key attempts in its handler at once:
// the checks that need two there (concurrent-burst; in-flight-retry and
// lease-fencing, whose retry arrives while the first attempt is held
// inside) are inconclusive, naming the rate limit, and every other check
// passes. A
// limit of four admits four of each burst of 32 (per process): enough for
// the reference to pass every check and for check-then-insert to be
// caught.
func RateLimited() []Entry {
	return []Entry{
		{App: "orders", Variant: string(orders.Reference), Flags: "-rate-limit 1", Instances: 1,
			Inconclusive: []string{idemcheck.CheckConcurrentBurst, idemcheck.CheckInFlightRetry, idemcheck.CheckLeaseFencing}},
		{App: "orders", Variant: string(orders.Reference), Flags: "-rate-limit 4"},
		{App: "orders", Variant: string(orders.CheckThenInsert), Flags: "-rate-limit 4",
			Check: idemcheck.CheckConcurrentBurst, Anomaly: string(idemcheck.DuplicateEffect)},
	}
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
	for _, app := range []string{"orders", "webhooks", "ordersmysql", "payments"} {
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
	// Adjust, when set, changes the entry's configuration before it is
	// certified (an effect query stated another way, say).
	Adjust func(*certify.Config)
	// ByURL certifies the entry as a user pointing idemcheck at a running
	// service does (`certify --url … --db …`): the process is started all
	// the same, but idemcheck is given its address and database only, no
	// hold on its processes or links, so the checks that need one are
	// skipped with the reason.
	ByURL bool
}

// Certify starts the entry as a process target (two instances behind a
// round-robin balancer, as a deployment with replicas) on its own
// database, with a payment provider double for the orders API, and
// certifies it.
func (b *Bins) Certify(ctx context.Context, e Entry, c Config) (*certify.Result, error) {
	command := filepath.Join(b.Dir, e.App) + " " + e.Args()
	instances := e.Instances
	if instances == 0 {
		instances = 2
	}
	o := targets.ProcessOptions{Command: command, Instances: instances, DSN: c.DSN, Logs: c.Logs}
	if e.Signed {
		o.Env = []string{webhooks.SecretEnv + "=" + SigningSecret, webhooks.SchemeEnv + "=" + e.SigningScheme()}
	}
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
	if e.Signed {
		cfg.Endpoint.Sign = &scenarios.Signing{Scheme: e.SigningScheme(), Secret: SigningSecret}
	}
	cfg.Name = e.Name()
	cfg.Checks = c.Checks
	cfg.Options = c.Options
	if e.App == "payments" {
		cfg.Options.Settle = PaymentsSettle
	}
	if c.ByURL {
		cfg.Powers, cfg.Replicas = nil, 0
	}
	if c.Adjust != nil {
		c.Adjust(&cfg)
	}
	return certify.Run(ctx, cfg)
}

// EndpointConfig is how idemcheck is told about each example ("orders" or
// "webhooks") started as pt: its request, its effect query and its contract.
func EndpointConfig(app string, pt *targets.ProcessTarget) certify.Config {
	base := pt.URL
	cfg := certify.Config{
		Settings: certify.Settings{Powers: pt.Powers(), DB: pt.DB.Pool, DBName: "the " + app + " database",
			EffectArgs: []idemcheck.Template{idemcheck.MustTemplate("{{intent}}")}},
		Replicas: pt.Replicas(),
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
		cfg.Policy.ArrivalHeader = orders.ReceivedHeader
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
		cfg.Policy.Lease = Lease
		cfg.Endpoint.Path = idemcheck.MustTemplate("/orders")
		cfg.Endpoint.Body = idemcheck.MustTemplate(`{"customerId":"{{intent}}","totalCents":4000}`)
		cfg.EffectSQL = "SELECT count(*) FROM orders WHERE customer_id = ?"
	case "payments":
		// The IETF preset takes 202 for "accepted, effect pending".
		cfg.Policy = idemcheck.IETF()
		cfg.Policy.ReplayHeader = "Idempotent-Replayed"
		// Its 202 names the payment's status monitor (Location): while
		// effects settle, each is read until it says the payment is over.
		cfg.Policy.StatusPointer, cfg.Policy.StatusDone, cfg.Policy.StatusFailed = "/status", []string{"succeeded"}, []string{"failed"}
		cfg.Endpoint.Path = idemcheck.MustTemplate("/payments")
		cfg.Endpoint.Body = idemcheck.MustTemplate(`{"customerId":"{{intent}}","amountCents":1500}`)
		cfg.EffectSQL = "SELECT count(*) FROM payments WHERE customer_id = $1"
	case "webhooks":
		cfg.Policy = idemcheck.Webhook()
		cfg.Endpoint.Path = idemcheck.MustTemplate("/webhooks")
		cfg.Endpoint.Body = idemcheck.MustTemplate(`{"eventId":"{{key}}","type":"payment.succeeded","data":{"customerId":"{{intent}}","amountCents":500}}`)
		failing := idemcheck.MustTemplate(`{"eventId":"{{key}}","type":"payment.succeeded","data":{"customerId":"{{intent}}","amountCents":500,"failFirst":true}}`)
		cfg.Endpoint.FailingBody = &failing
		// A sender's id of each delivery, new at each (the event's id is
		// in the body): what dedupe-delivery-id takes for the event's.
		cfg.Endpoint.Header = []scenarios.Header{{Name: webhooks.DeliveryHeader, Value: idemcheck.MustTemplate("{{uuid}}")}}
		cfg.EffectSQL = "SELECT count(*) FROM ledger WHERE customer_id = $1"
	}
	return cfg
}

// PaymentsSettle is the settle bound the payments API is certified with
// (--settle 10s): its worker writes 100-500 ms after the 202 and its jobs
// are retried 1.5 s after their first attempt, well inside it.
const PaymentsSettle = 10 * time.Second

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
	// Ran are the checks the report holds, whatever their status.
	Ran []string
	// Robustness are the robustness findings each check reported (the
	// target exited under a fault): apart from the verdict, so neither a
	// catch nor a false alarm.
	Robustness map[string][]idemcheck.Kind
	// Partial are the checks that could not send all of themselves to
	// the target, with what they left out and why.
	Partial map[string]string
	// ProviderWatched says a check saw the target's calls to a provider
	// double.
	ProviderWatched bool
}

// ran reports whether the report holds check c.
func (r Row) ran(c string) bool { return slices.Contains(r.Ran, c) }

// Robust reports whether an anomaly kind is a robustness finding, reported
// apart from the verdict.
func Robust(k idemcheck.Kind) bool { return k.Class() == idemcheck.RobustnessFinding }

// NewRow reads a report.
func NewRow(e Entry, r idemcheck.Report) Row {
	row := Row{Entry: e, Found: map[string][]idemcheck.Kind{}, Skipped: map[string]string{}, Inconclusive: map[string]string{},
		Robustness: map[string][]idemcheck.Kind{}, Partial: map[string]string{}}
	for _, c := range r.Checks {
		row.Ran = append(row.Ran, c.Name)
		if c.Partial != "" {
			row.Partial[c.Name] = c.Partial
		}
		if c.Provider != nil {
			row.ProviderWatched = true
		}
		if c.Status == idemcheck.Skip {
			row.Skipped[c.Name] = c.Reason
		}
		if c.Status == idemcheck.Inconclusive {
			row.Inconclusive[c.Name] = c.Reason
		}
		for _, i := range c.Remarks {
			if k := r.Remarks[i].Kind; Robust(k) && !slices.Contains(row.Robustness[c.Name], k) {
				row.Robustness[c.Name] = append(row.Robustness[c.Name], k)
			}
		}
		for _, i := range c.Anomalies {
			k := r.Anomalies[i].Kind
			if Robust(k) {
				if !slices.Contains(row.Robustness[c.Name], k) {
					row.Robustness[c.Name] = append(row.Robustness[c.Name], k)
				}
				continue
			}
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
		if len(r.Found) > 0 {
			return false
		}
		for c := range r.Inconclusive {
			if !slices.Contains(r.Entry.Inconclusive, c) {
				return false
			}
		}
		for _, c := range r.Entry.Inconclusive {
			if _, ran := r.Inconclusive[c]; !ran && r.Skipped[c] == "" && r.ran(c) {
				return false // it passed, on nothing
			}
		}
		return true
	}
	return slices.ContainsFunc(r.Found[r.Entry.Check], func(k idemcheck.Kind) bool { return SameCatch(k, idemcheck.Kind(r.Entry.Anomaly)) })
}

// SameCatch reports whether found is the anomaly want names: the same
// kind, or a late duplicate effect where a duplicate effect is wanted. A
// second effect that lands after its check's counts settled (a job retried
// after its commit, later than the quiet period) is the same bug as one
// that lands before: which one a run shows depends on when the retry ran.
func SameCatch(found, want idemcheck.Kind) bool {
	return found == want || want == idemcheck.DuplicateEffect && found == idemcheck.LateDuplicateEffect
}

// Unreachable says why a buggy variant's bug was out of this run's reach:
// its expected check did not apply (certified by URL, a check that needs
// a hold on the target's processes or links is skipped), or it applied
// without the half the bug needs (Entry.Needs: its bursts timed, not held
// at the database; no failure inside the server; no provider double to
// watch). A run that missed the bug for that is neither a catch nor a
// miss. "" when the run caught the bug, when it could have, and for a
// reference.
func (r Row) Unreachable() string {
	if r.Entry.Reference() || r.Caught() {
		return ""
	}
	if why := r.Skipped[r.Entry.Check]; why != "" {
		return why
	}
	switch r.Entry.Needs {
	case apikit.NeedsLink:
		if p := r.Partial[r.Entry.Check]; p != "" {
			return "its bug needs idemcheck to hold or cut the database link: " + p
		}
	case apikit.NeedsProvider:
		if !r.ProviderWatched {
			return "its bug shows only at the payment provider, which idemcheck watches through a double it serves to a target it starts"
		}
	}
	return ""
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
	width := 34 // the header's
	for _, r := range rows {
		width = max(width, len(r.Entry.Name()))
	}
	fmt.Fprintf(w, "%-*s", width, "variant (expected check → anomaly)")
	for _, c := range checks {
		fmt.Fprintf(w, " %-9s", short(c))
	}
	fmt.Fprintf(w, " verdict\n")
	caught, total := 0, 0
	for _, r := range rows {
		fmt.Fprintf(w, "%-*s", width, r.Entry.Name())
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
			if len(r.Entry.Inconclusive) > 0 {
				verdict = "UNEXPECTED" // inconclusive elsewhere, or passed where it cannot have happened
			}
		case r.Entry.Reference():
			verdict = "FALSE ALARM"
		case r.Unreachable() != "":
			verdict = "out of reach"
		case !r.Caught():
			verdict = "MISSED"
		}
		total++
		if r.Caught() || r.Unreachable() != "" {
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
	idemcheck.DuplicateEffect: "dup", idemcheck.LateDuplicateEffect: "late", idemcheck.MultipleCreated: "multi", idemcheck.ReplayMismatch: "rmis",
	idemcheck.FreshResultOnReplay: "fresh", idemcheck.PayloadMismatchAccepted: "pacc", idemcheck.FalseMismatch: "fmis",
	idemcheck.CrossEndpointReplay: "xend", idemcheck.CrossTenantReplay: "xten", idemcheck.OverDeduplication: "odup",
	idemcheck.MissingKeyAccepted: "nokey", idemcheck.ServerErrorUnderRetry: "5xx", idemcheck.StuckKey: "stuck",
	idemcheck.LostEffect: "lost", idemcheck.UnexpectedStatus: "status", idemcheck.NeverAcknowledged: "noack",
	idemcheck.RejectedRequestSaved: "rsave", idemcheck.MalformedKeyAccepted: "mkey",
	idemcheck.ProviderDuplicateCharge: "pdup", idemcheck.ProviderCallWithoutKey: "pnokey",
	idemcheck.BadSignatureAccepted: "badsig", idemcheck.StaleSignatureAccepted: "stalesig",
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
