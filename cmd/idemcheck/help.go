package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/idemcheck/idemcheck/internal/program"
)

// flagGroups are the named groups a command's flags are shown in, in
// order (flagGroup places each flag).
var flagGroups = []struct{ name, title string }{
	{"target", "Target: what to certify and how idemcheck starts it"},
	{"request", "Request: what each attempt sends"},
	{"effects", "Effects: where one intent's effects are counted"},
	{"checks", "Checks: which run, how large, and the contract they hold the target to"},
	{"outputs", "Outputs: reports and histories"},
	{"tls", "TLS: an https:// target"},
	{"safety", "Safety: limits on what is sent and where"},
	{"other", "Other"},
}

// flagTable places each flag of certify, soak and run in a group of
// flagGroups, in the order the help shows them: adding a flag is adding its
// line here (TestEveryFlagHasAGroup fails on a flag in no group). A name
// may be listed before its flag exists; it is then simply not shown.
var flagTable = []struct{ flag, group string }{
	{"url", "target"},
	{"cmd", "target"},
	{"image", "target"},
	{"instances", "target"},
	{"ready", "target"},
	{"env", "target"},
	{"provider-env", "target"},
	{"db-image", "target"},
	{"target-log", "target"},
	{"name", "target"},
	{"f", "target"},
	{"openapi", "target"},
	{"methods", "target"},
	{"method", "request"},
	{"path", "request"},
	{"body", "request"},
	{"header", "request"},
	{"tenant", "request"},
	{"key-header", "request"},
	{"key-pointer", "request"},
	{"failing-body", "request"},
	{"invalid-body", "request"},
	{"other-path", "request"},
	{"protocol", "request"},
	{"sign", "request"},
	{"sign-secret", "request"},
	{"sign-header", "request"},
	{"sign-skew", "request"},
	{"db", "effects"},
	{"effect-sql", "effects"},
	{"effect-arg", "effects"},
	{"effect-http", "effects"},
	{"effect-count", "effects"},
	{"effect-batch-sql", "effects"},
	{"count-during", "effects"},
	{"settle", "effects"},
	{"db-engine", "effects"},
	{"checks", "checks"},
	{"skip-checks", "checks"},
	{"policy", "checks"},
	{"key-syntax", "checks"},
	{"lease", "checks"},
	{"replay-header", "checks"},
	{"arrival-header", "checks"},
	{"resource-id", "checks"},
	{"ignore-field", "checks"},
	{"mismatch-status", "checks"},
	{"missing-key-status", "checks"},
	{"in-progress-status", "checks"},
	{"burst", "checks"},
	{"burst-rounds", "checks"},
	{"rounds", "checks"},
	{"fault-rounds", "checks"},
	{"redeliveries", "checks"},
	{"retry-window", "checks"},
	{"timed-bursts", "checks"},
	{"duration", "checks"},
	{"intents", "checks"},
	{"cut-share", "checks"},
	{"fault", "checks"},
	{"workers", "checks"},
	{"seed", "checks"},
	{"shard", "checks"},
	{"shards", "checks"},
	{"json", "outputs"},
	{"junit", "outputs"},
	{"html", "outputs"},
	{"history", "outputs"},
	{"no-color", "outputs"},
	{"allow-inconclusive", "outputs"},
	{"vegeta-results", "outputs"},
	{"progress", "outputs"},
	{"progress-every", "outputs"},
	{"value", "outputs"},
	{"cacert", "tls"},
	{"cert", "tls"},
	{"key", "tls"},
	{"insecure", "tls"},
	{"allow-remote", "safety"},
	{"rate", "safety"},
	{"max-duration", "safety"},
	{"timeout", "safety"},
	{"max-body", "safety"},
	{"redact-header", "safety"},
	{"redact-field", "safety"},
	{"redact-query", "safety"},
}

// flagGroup is each flag's group, and flagRank its place in flagTable.
var flagGroup, flagRank = func() (map[string]string, map[string]int) {
	group, rank := map[string]string{}, map[string]int{}
	for i, f := range flagTable {
		group[f.flag], rank[f.flag] = f.group, i
	}
	return group, rank
}()

// groupedCommands are the commands whose help shows its flags in groups.
var groupedCommands = map[string]bool{"certify": true, "soak": true, "run": true}

// commandHelp is what a command's help says before its flags.
type commandHelp struct {
	usage    []string
	summary  string
	examples []string
	notes    string
}

// cmdContract is the --cmd contract, said the same way by certify's and
// soak's help and the man page (README.md and docs/certify.md say it too).
const cmdContract = `The --cmd contract: the command runs with sh -c and is given PORT (a free
port to listen on), ADDR (127.0.0.1, the address to listen on) and
DATABASE_URL (idemcheck's proxy in front of --db or, without --db, of a new,
empty PostgreSQL database: the target must create its tables itself, running
its migrations at start). It is ready when GET /healthz answers 2xx (within
30 s)`

// certifyContract adds --ready, which only certify has.
const certifyContract = cmdContract + `; --ready PATH names another path, and
--ready tcp waits only until its port accepts connections. A target whose
readiness path answers 404 is up without that route: idemcheck says so after
3 s and names --ready.`

// soakContract is the contract as soak, which has no --ready, holds it.
const soakContract = cmdContract + `; a target without that route
fails to start after 3 s of 404s (certify's --ready names another path).`

var helps = map[string]commandHelp{
	"certify": {
		usage: []string{
			"idemcheck certify --url URL --path PATH --body TEMPLATE [--db DSN --effect-sql SQL --effect-arg TEMPLATE] [flags]",
			"idemcheck certify --cmd COMMAND … | --image IMAGE …",
		},
		summary: "Certifies one endpoint: same-key bursts, replies cut after commit, retries, crashes, and (with\n--cmd or --image) faults on the target's database link; every broken promise is reported with\nthe attempts that witness it.",
		examples: []string{
			"# a running API, its effects counted in its database",
			`idemcheck certify --url http://127.0.0.1:8080 --path /orders \`,
			`  --body '{"customerId":"{{intent}}","totalCents":4000}' --db "$DATABASE_URL" \`,
			`  --effect-sql 'SELECT count(*) FROM orders WHERE customer_id = $1' --effect-arg '{{intent}}'`,
			"# idemcheck starts the API itself, with a throwaway database, and crashes and stalls it",
			`idemcheck certify --cmd './bin/orders -lease 2s' --lease 2s --path /orders \`,
			`  --body '{"customerId":"{{intent}}","totalCents":4000}' \`,
			`  --effect-sql 'SELECT count(*) FROM orders WHERE customer_id = $1' --effect-arg '{{intent}}'`,
			"# in CI: the same, with reports for the pipeline (exit 1 on anomalies)",
			`idemcheck certify --url "$API_URL" --path /orders --body … --header 'Authorization: Bearer ${TOKEN}' \`,
			`  --json idemcheck.json --junit idemcheck.xml --history idemcheck.jsonl`,
		},
		notes: certifyContract,
	},
	"soak": {
		usage:   []string{"idemcheck soak (--url URL | --cmd COMMAND) --path PATH --body TEMPLATE [flags]"},
		summary: "Sends a rate of intents for a while, cuts a share of the replies after commit and retries\nthem, and counts every intent's effects.",
		examples: []string{
			`idemcheck soak --url http://127.0.0.1:8080 --path /orders --body '{"customerId":"{{intent}}","totalCents":4000}' \`,
			`  --db "$DATABASE_URL" --effect-sql 'SELECT count(*) FROM orders WHERE customer_id = $1' --effect-arg '{{intent}}' \`,
			`  --rate 200 --duration 30s`,
		},
		notes: soakContract,
	},
	"run": {
		usage:   []string{"idemcheck run -f SUITE.yaml [flags]", "idemcheck run --openapi SPEC --url URL [flags]"},
		summary: "Certifies every endpoint of a suite file (idemcheck init writes one), or every unsafe\noperation of an OpenAPI description, and ends with one verdict for the suite.",
		examples: []string{
			`TARGET_URL=http://127.0.0.1:8080 idemcheck run -f suite.yaml --json report.json`,
			`idemcheck run --openapi openapi.yaml --url http://127.0.0.1:8080`,
		},
	},
	"init": {
		usage:    []string{"idemcheck init --openapi SPEC [-o suite.yaml] [flags]"},
		summary:  "Writes a suite file from an OpenAPI description, for idemcheck run -f.",
		examples: []string{`idemcheck init --openapi openapi.yaml -o suite.yaml`},
	},
	"check": {
		usage:    []string{"idemcheck check [--json FILE] [--junit FILE] [--html FILE] [HISTORY.jsonl|- ...]"},
		summary:  "Checks recorded histories again, offline: several files, globs, or - (standard input).",
		examples: []string{`idemcheck check history.jsonl`, `idemcheck certify … --history - | idemcheck check`},
	},
	"estimate": {
		usage:    []string{"idemcheck estimate --requests-per-day N --timeout-rate R --succeeded-share S [flags]"},
		summary:  "Estimates what unrecognised retries cost: duplicates a day, and the storage keys take.",
		examples: []string{`idemcheck estimate --requests-per-day 20000 --timeout-rate 0.2% --succeeded-share 50% --value 40`},
	},
	"version": {
		usage:   []string{"idemcheck version"},
		summary: "Prints the version, commit and Go version of this build (also idemcheck --version).",
	},
	"completion": {
		usage:    []string{"idemcheck completion bash|zsh|fish"},
		summary:  "Prints a shell completion script for idemcheck's commands and flags.",
		examples: []string{`source <(idemcheck completion bash)`, `idemcheck completion fish > ~/.config/fish/completions/idemcheck.fish`},
	},
	"man": {
		usage:   []string{"idemcheck man"},
		summary: "Prints idemcheck's manual page (roff), from the same text as its help: make man writes man/idemcheck.1.",
	},
}

// setHelp makes fs's -h print the command's help (writeHelp).
func setHelp(fs *flag.FlagSet) {
	program.SetHelp(fs, func(w io.Writer) { writeHelp(w, fs) })
}

// writeHelp prints a command's help: its usage, what it does, examples,
// notes, then its flags, in groups for the commands that have many.
func writeHelp(w io.Writer, fs *flag.FlagSet) {
	h := helps[fs.Name()]
	fmt.Fprintln(w, "Usage:")
	for _, u := range h.usage {
		fmt.Fprintf(w, "  %s\n", u)
	}
	if h.summary != "" {
		fmt.Fprintf(w, "\n%s\n", h.summary)
	}
	if len(h.examples) > 0 {
		fmt.Fprintln(w, "\nExamples:")
		for _, e := range h.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	if h.notes != "" {
		fmt.Fprintf(w, "\n%s\n", h.notes)
	}
	for _, g := range groupFlags(fs) {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, f := range g.flags {
			name, usage := flag.UnquoteUsage(f)
			line := "  " + dashed(f.Name)
			if name != "" {
				line += " " + name
			}
			if !isZeroDefault(f) {
				usage += " (default " + quoteDefault(f) + ")"
			}
			fmt.Fprintf(w, "%s\n%s\n", line, wrap(usage, "      ", 100))
		}
	}
	fmt.Fprintln(w, "\nExit codes: 0 every check held, 1 anomalies found, 2 bad usage, 3 the target could not run, 4 nothing proved either way.")
}

// flagsInGroup is one group of a command's flags.
type flagsInGroup struct {
	title string
	flags []*flag.Flag
}

// groupFlags lays fs's flags out in flagGroups for a grouped command, and
// under one "Flags" heading for the others. A flag of a grouped command
// missing from flagGroup is shown under Other.
func groupFlags(fs *flag.FlagSet) []flagsInGroup {
	var all []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { all = append(all, f) })
	if len(all) == 0 {
		return nil
	}
	if !groupedCommands[fs.Name()] {
		return []flagsInGroup{{"Flags", all}}
	}
	byGroup := map[string][]*flag.Flag{}
	for _, f := range all {
		g := flagGroup[f.Name]
		if g == "" {
			g = "other"
		}
		byGroup[g] = append(byGroup[g], f)
	}
	var out []flagsInGroup
	for _, g := range flagGroups {
		if fl := byGroup[g.name]; len(fl) > 0 {
			// In flagTable's order; a flag missing from it last.
			sort.SliceStable(fl, func(i, j int) bool {
				ri, iok := flagRank[fl[i].Name]
				rj, jok := flagRank[fl[j].Name]
				if iok != jok {
					return iok
				}
				return ri < rj
			})
			out = append(out, flagsInGroup{g.title, fl})
		}
	}
	return out
}

// isZeroDefault reports whether f's default is its type's zero value,
// which the help leaves unsaid, as the flag package does.
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
		return true
	}
	return false
}

func quoteDefault(f *flag.Flag) string {
	if _, ok := f.Value.(interface{ IsBoolFlag() bool }); ok {
		return f.DefValue
	}
	if strings.ContainsAny(f.DefValue, " ,") || f.DefValue == "" {
		return fmt.Sprintf("%q", f.DefValue)
	}
	return f.DefValue
}

// errCollected ends a command whose flags were only being collected
// (flagsOf).
var errCollected = errors.New("flags collected")

// collectFlags, when set, receives a command's flag set in place of its
// parse (parseFlags): flagsOf runs a command for its flags alone.
var collectFlags func(*flag.FlagSet)

// flagsOf returns the flag set command registers, without running it:
// the command stops at its parse (collectFlags). Commands without flags
// get an empty set. It is for the help's own commands (completion, man),
// never while another command runs: collectFlags is the process's.
func flagsOf(command string) *flag.FlagSet {
	var got *flag.FlagSet
	collectFlags = func(fs *flag.FlagSet) { got = fs }
	defer func() { collectFlags = nil }()
	_ = run(context.Background(), []string{command}, io.Discard, io.Discard)
	if got == nil {
		got = flag.NewFlagSet(command, flag.ContinueOnError)
	}
	return got
}

// sortedFlagNames are fs's flag names in order.
func sortedFlagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	return names
}

// wrap breaks text into lines of at most width columns, each starting
// with indent.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(text) {
		switch {
		case n == 0:
			b.WriteString(indent + word)
			n = len(indent) + len(word)
		case n+1+len(word) > width:
			b.WriteString("\n" + indent + word)
			n = len(indent) + len(word)
		default:
			b.WriteString(" " + word)
			n += 1 + len(word)
		}
	}
	return b.String()
}

// dashed is how a flag is written: -f and -o with one dash, as the usage
// writes them, every longer name with two.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
