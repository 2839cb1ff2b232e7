// Command soakhistories writes the histories of a sharded soak of a given
// size, for measuring `idemcheck check` on them (BENCHMARKS.md, Sharded
// soak): -shards files of soak records as soak --shard writes them (a
// header with the shard, then each intent, its first attempt, its retry
// when the first was cut, and every intent's observation after the load),
// -attempts attempts in all, -cut of the first attempts cut and retried,
// -dup of the intents with two effects. Nothing is sent anywhere.
//
//	go run ./bench/cmd/soakhistories -attempts 10000000 -shards 4 -dir /tmp/hist
//	/usr/bin/time -v idemcheck check /tmp/hist/soak-*.jsonl
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/history"
)

func main() {
	attempts := flag.Int64("attempts", 1000000, "attempts in all, over every shard")
	shards := flag.Int("shards", 4, "shard histories to write")
	cut := flag.Float64("cut", 0.01, "share of first attempts cut after commit and retried")
	dup := flag.Float64("dup", 0.001, "share of intents with two effects")
	dir := flag.String("dir", ".", "folder to write soak-0.jsonl … into")
	flag.Parse()
	if err := run(*attempts, *shards, *cut, *dup, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "soakhistories:", err)
		os.Exit(1)
	}
}

func run(attempts int64, shards int, cut, dup float64, dir string) error {
	// Intents whose first attempt is cut take two attempts.
	intents := int64(float64(attempts) / (1 + cut))
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var total int64
	for i := range shards {
		s := idemcheck.Shard{Index: i, Count: shards}
		n := s.Part(intents)
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("soak-%d.jsonl", i)))
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		enc := history.NewEncoder(w)
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		run := idemcheck.Run{Seed: 1, Target: idemcheck.Target{URL: "http://127.0.0.1:8080", Method: "POST", Path: "/orders"},
			Policy: idemcheck.IETF(), Checks: []idemcheck.PlannedCheck{{Name: idemcheck.CheckSoak}},
			EffectQuery: "SELECT count(*) FROM orders WHERE customer_id = $1", SoakFaults: []string{fmt.Sprintf("cut-reply@%g", cut)}, Shard: &s}
		if err := enc.Run(run); err != nil {
			return err
		}
		effects := make([]int64, 0, 1024)
		ids := make([]string, 0, 1024)
		id := 0
		flushObs := func() error {
			for j, in := range ids {
				if err := enc.Observation(idemcheck.Observation{Intent: in, Check: idemcheck.CheckSoak, Effects: effects[j],
					Query: run.EffectQuery, Args: []string{in}}); err != nil {
					return err
				}
			}
			ids, effects = ids[:0], effects[:0]
			return nil
		}
		for k := int64(1); k <= n; k++ {
			seq := int(s.Seq(k))
			in := idemcheck.Intent{ID: fmt.Sprintf("ic-bench%d-%d", i, seq), Key: uuid.NewString(), Seq: seq, Check: idemcheck.CheckSoak, Round: 1}
			if err := enc.Intent(in); err != nil {
				return err
			}
			t0 := start.Add(time.Duration(seq) * 10 * time.Microsecond)
			a := idemcheck.Attempt{Intent: in.ID, Key: in.Key, Check: idemcheck.CheckSoak, Round: 1, Step: 1,
				Method: "POST", Path: "/orders", Header: http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {in.Key}},
				Body: `{"customerId":"` + in.ID + `","totalCents":4000}`, Fingerprint: "7c143f648b66eefd",
				Start: t0, End: t0.Add(2 * time.Millisecond), Outcome: idemcheck.Replied, Status: 201,
				RespHeader: http.Header{"Content-Type": {"application/json"}}, RespBody: `{"orderId":` + fmt.Sprint(seq) + `,"status":"created"}`}
			isCut := rng.Float64() < cut
			if isCut {
				a.Fault, a.FaultLinks = "cut-reply", []string{idemcheck.LinkClient}
				a.Outcome, a.Status, a.RespHeader, a.RespBody, a.Error = idemcheck.Unknown, 0, nil, "", "unexpected EOF"
			}
			id++
			a.ID = id
			if err := enc.Attempt(a); err != nil {
				return err
			}
			if isCut {
				r := a
				id++
				r.ID, r.Step, r.Fault, r.FaultLinks, r.Error = id, 2, "", nil, ""
				r.Start, r.End = a.End, a.End.Add(time.Millisecond)
				r.Outcome, r.Status = idemcheck.Replied, 201
				r.RespHeader = http.Header{"Content-Type": {"application/json"}, "Idempotent-Replayed": {"true"}}
				if err := enc.Attempt(r); err != nil {
					return err
				}
			}
			total += int64(id - int(a.ID) + 1)
			e := int64(1)
			if rng.Float64() < dup {
				e = 2
			}
			ids, effects = append(ids, in.ID), append(effects, e)
			if len(ids) == cap(ids) {
				// Effects are counted in batches as the soak counts them.
				if err := flushObs(); err != nil {
					return err
				}
			}
		}
		if err := flushObs(); err != nil {
			return err
		}
		if err := enc.Flush(); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	fmt.Printf("%d shard histories, %d intents, %d attempts\n", shards, intents, total)
	return nil
}
