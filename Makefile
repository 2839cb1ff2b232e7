# idemcheck: `make demo` runs the demo (examples/demo), `make test` the whole test
# suite. Both install what they need on a fresh Debian machine (PostgreSQL
# and MariaDB server binaries) and start nothing that outlives them. In CI (CI=true)
# `make test` also installs and starts a Docker engine when none answers, so
# that the container tests run for real, and stops it again when the tests
# end; an engine that was already running is left running.

GO ?= go
export PATH := $(PATH):/usr/local/go/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PKGS := ./...

.PHONY: all build install man example-api doc-blocks release-check demo test vet fmt-check postgres mariadb chromium docker-setup images images-if-docker clean bench bench-product bench-bursts bench-soak bench-merge zoo fuzz

all: build

# -buildvcs=auto records the commit in the binary where git can tell it, so
# that idemcheck version and every report name the build; it overrides a
# GOFLAGS=-buildvcs=false set elsewhere.
BUILDFLAGS := -buildvcs=auto

## build: bin/idemcheck and bin/orders (the example orders API, for --cmd).
build:
	$(GO) build $(BUILDFLAGS) -o bin/idemcheck ./cmd/idemcheck
	$(GO) build $(BUILDFLAGS) -o bin/orders ./examples/orders/cmd/orders

## install: idemcheck into $(go env GOBIN), else $(go env GOPATH)/bin, and beside it idemcheck-demo
## (examples/demo: the demo, and the example API to certify).
install:
	$(GO) install $(BUILDFLAGS) ./cmd/idemcheck
	@dir=$$($(GO) env GOBIN); [ -n "$$dir" ] || dir=$$($(GO) env GOPATH)/bin; \
	$(GO) build $(BUILDFLAGS) -o "$$dir/idemcheck-demo" ./examples/demo || exit 1; \
	echo "make: installed $$dir/idemcheck ($$($$dir/idemcheck version)) and $$dir/idemcheck-demo (the demo and the example API)"; \
	case ":$$PATH:" in *":$$dir:"*) ;; *) echo "make: $$dir is not on your PATH: export PATH=\"$$dir:\$$PATH\"";; esac

## man: man/idemcheck.1, the manual page, generated from the same text as idemcheck's help (idemcheck man);
## read it with man -l man/idemcheck.1.
man:
	@mkdir -p man
	$(GO) run ./cmd/idemcheck man > man/idemcheck.1.tmp && mv man/idemcheck.1.tmp man/idemcheck.1
	@echo "make: wrote man/idemcheck.1 (man -l man/idemcheck.1)"

## example-api: serve the example orders API on 127.0.0.1:8080 with a throwaway PostgreSQL until Ctrl-C
## (it prints the DSN of its database; idemcheck-demo example-api --background does the same in the background).
EXAMPLE_PORT ?= 8080
example-api: postgres
	$(GO) run ./examples/demo example-api --port $(EXAMPLE_PORT)

## doc-blocks: run every sh block of README.md and docs/*.md, as written, in a fresh clone of this commit
## (commit first), each file in one shell, in order (about 5 minutes); blocks marked doc-blocks: skip are
## listed with their reason and left out, needs docker ones run where an engine answers.
## DOC_BLOCKS_ONLY=README.md,docs/ci.md runs those files alone.
DOC_BLOCKS_ONLY ?=
doc-blocks: postgres mariadb
	IDEMCHECK_DOC_BLOCKS=1 IDEMCHECK_DOC_BLOCKS_ONLY=$(DOC_BLOCKS_ONLY) $(GO) test -count=1 -v -timeout 40m -run '^TestDocBlocks$$' ./internal/docblocks

## release-check: build the release binaries (linux and darwin, amd64 and arm64) as .goreleaser.yaml
## describes them, and with goreleaser and docker buildx its image of idemcheck, without publishing anything.
release-check:
	@.ci/release-check

## postgres: make sure the PostgreSQL server binaries (initdb, postgres) exist,
## with the contrib extensions: the effect-query tests install dblink, and
## fail without it.
postgres:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; else \
		echo "make: installing the PostgreSQL server binaries (apt-get install postgresql)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends postgresql >/dev/null; \
	fi
	@if ls /usr/share/postgresql/*/extension/dblink.control >/dev/null 2>&1; then :; else \
		echo "make: installing the PostgreSQL contrib extensions (apt-get install postgresql-contrib)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends postgresql-contrib >/dev/null; \
	fi

## mariadb: make sure the MariaDB server binary (mariadbd) exists, for MySQL-family targets and their tests.
mariadb:
	@if command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; then :; else \
		echo "make: installing the MariaDB server (apt-get install mariadb-server)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends mariadb-server >/dev/null; \
	fi

# The names the browser goes by, in the order the browser test looks them up
# (internal/render/browser_test.go's browserNames, which a test there keeps
# equal to this list); IDEMCHECK_CHROMIUM names one instead, for both.
CHROMIUM_NAMES := chromium chromium-browser google-chrome google-chrome-stable

## chromium: make sure headless Chromium exists, for the HTML report's browser test (internal/render); Debian's
## package when none of $(CHROMIUM_NAMES) is there (GitHub's Ubuntu runners carry chromium-browser and Google Chrome
## already). IDEMCHECK_CHROMIUM names the browser to use instead, for this target and the test.
chromium:
	@if [ -n "$$IDEMCHECK_CHROMIUM" ]; then \
		command -v "$$IDEMCHECK_CHROMIUM" >/dev/null 2>&1 || { echo "make: IDEMCHECK_CHROMIUM=$$IDEMCHECK_CHROMIUM is no program: name an installed browser, or unset it"; exit 2; }; \
	else \
		found=; for name in $(CHROMIUM_NAMES); do command -v $$name >/dev/null 2>&1 && { found=$$name; break; }; done; \
		if [ -z "$$found" ]; then \
			echo "make: installing Chromium for the HTML report's browser test (apt-get install chromium)"; \
			$(SUDO) apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
		fi; \
	fi

## demo: certify the example orders API and three classic bugs on a throwaway PostgreSQL (examples/demo).
## Built, not go run, so that its reports name the commit (go run records none); the binary goes into a
## temporary folder that is removed when the demo ends, Ctrl-C included.
demo: postgres mariadb
	@d=$$(mktemp -d "$${TMPDIR:-/tmp}/idemcheck-demo-bin.XXXXXX"); trap 'rm -rf "$$d"' EXIT; trap 'exit 130' INT TERM; \
	$(GO) build $(BUILDFLAGS) -o "$$d/idemcheck-demo" ./examples/demo && "$$d/idemcheck-demo"

# fmt-check: gofmt, then goimports (the standard library's imports in a group
# of their own), pinned so that every machine judges the same way; go run
# fetches it once into the module cache, and it checks the tree in seconds.
GOIMPORTS := golang.org/x/tools/cmd/goimports@v0.52.0
fmt-check:
	@files=$$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'); \
	out=$$(gofmt -l $$files); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi; \
	out=$$($(GO) run $(GOIMPORTS) -l $$files) || exit 1; \
	if [ -n "$$out" ]; then echo "goimports would change (go run $(GOIMPORTS) -w FILE):"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

## docker-setup: make sure a Docker engine answers: installs Debian's docker.io and starts it with host networking only (no bridge, no iptables) when absent, and removes containers left by killed runs.
docker-setup:
	@.ci/docker-setup

## images: build idemcheck/orders:local, idemcheck/ordersmysql:local, idemcheck/idemcheck:local, idemcheck/postgres:15-local and idemcheck/mariadb:local from this machine's own binaries (no base image, no registry).
images: postgres mariadb docker-setup
	@GO="$(GO)" docker/build-images

# Outside CI the container tests run where an engine already answers and
# skip, with the reason, where none does.
images-if-docker: postgres mariadb
	@if docker info >/dev/null 2>&1; then GO="$(GO)" docker/build-images; \
	else echo "make: no Docker engine answers, so the container tests will skip (make docker-setup installs and starts one)"; fi

# In CI the container tests must run: Docker is set up, the images are
# built, and IDEMCHECK_REQUIRE_DOCKER=1 turns a container test's skip into a
# failure, since a skip there would only hide a broken setup; the same
# for the HTML report's browser test with IDEMCHECK_REQUIRE_BROWSER=1
# (CI=true alone has the same effect on that test), and for the MariaDB
# tests (targets/mysqltest) with IDEMCHECK_REQUIRE_MARIADB=1.
#
# TEST_TIMEOUT is go test's limit for each package's test binary; CI's job
# limit (.github/workflows/ci.yml, timeout-minutes: 40) is above it, with
# room for setup, so that a hung test is reported by go test, with its
# stacks, before the job is cancelled. The slowest package, examples/zoo,
# took 724 s under two busy loops while it still certified each reference
# 20 times, and 152 s once each (load average 15-18); README.md ("Tests")
# has the suite's measured time.
TEST_TIMEOUT ?= 30m
TEST_GO = $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)

## test: formatting, vet, and every test with the race detector, on real PostgreSQL and MariaDB, real HTTP over loopback, headless Chromium
## (the HTML report) and (where Docker runs; always in CI) real containers. Each zoo reference and variant is certified once
## here; `make zoo ZOO_FLAGS="-runs 20 -expected-only"` is the 20-run matrix.
ifeq ($(CI),true)
# The engine docker-setup starts (none when one already answers) is stopped
# when the tests end, however they end.
test: postgres mariadb chromium fmt-check vet
	@started=$$(mktemp "$${TMPDIR:-/tmp}/idemcheck-dockerd-started.XXXXXX"); \
	trap '.ci/docker-stop "$$started"' EXIT; trap 'exit 130' INT TERM; \
	DOCKERD_STARTED="$$started" .ci/docker-setup && GO="$(GO)" docker/build-images && \
	IDEMCHECK_REQUIRE_DOCKER=1 IDEMCHECK_REQUIRE_BROWSER=1 IDEMCHECK_REQUIRE_MARIADB=1 $(TEST_GO)
else
test: postgres mariadb chromium fmt-check vet images-if-docker
	$(TEST_GO)
endif

## zoo: certify every example API (references and the bug zoo) and print the detection matrix.
## ZOO_FLAGS passes flags on: `make zoo ZOO_FLAGS="-runs 20 -expected-only"` certifies each entry 20 times, the matrix
## that make test (one certification of each) leaves out to stay short.
ZOO_FLAGS ?=
zoo: postgres mariadb
	$(GO) run ./examples/zoo/cmd/zoo $(ZOO_FLAGS)

## fuzz: every fuzz target for FUZZTIME each (default 60s), one after another; a finding stops the run and
## leaves its input under the package's testdata/fuzz folder, where go test replays it from then on.
## FUZZMINIMIZETIME bounds the minimising of each input that finds new code: go test's default, 60s, is a
## whole FUZZTIME, in which the counts do not move (FuzzParseGenerate then looked stalled at 8 executions).
FUZZTIME ?= 60s
FUZZMINIMIZETIME ?= 5s
FUZZ_TARGETS := \
	.:FuzzParseTemplate ./history:FuzzReadHistories \
	./internal/suite:FuzzParse ./internal/suite:FuzzParsePolicy \
	./internal/openapi:FuzzParseGenerate \
	./targets:FuzzRedactDSN \
	./faults:FuzzPGScanner ./internal/mysqlwire:FuzzScanner \
	./internal/wire:FuzzHTTP1Reply ./internal/wire:FuzzH2Reply
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzz: $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg || exit 1; \
	done

clean:
	rm -rf bin man

## bench: every benchmark, figures written to BENCHMARKS.md (about 21 minutes): first bench-product, then
## bench-bursts, then bench-soak. Note the load average: the first figure should be below 0.6 for a quiet machine.
## bench-product: bursts through the product path, the code `idemcheck certify --checks concurrent-burst` runs
## (certify.Run, the real wire client), against two race targets in processes of their own (one holding its reply
## 200 us after its check, one answering at once), over HTTP/1.1, h2c and h2 over TLS (a self-signed certificate,
## --insecure), N=8 and 32, with vegeta and goroutines on a barrier interleaved burst by burst in the same run; across
## loopback (straight to the targets), then an emulated LAN and WAN (internal/linkemu, one link in front of each
## target); once on the machine as it is, once with two busy loops that it starts and ends itself (about 10 minutes).
## To stay affordable the links get fewer bursts, not fewer combinations: 100 per driver and combination across
## loopback, -link-bursts 50 across lan and wan, where a round of the three drivers takes 0.1-0.5 s (a WAN round
## trip is 20-28 ms, a new TLS connection two of them); -max 18m bounds the measuring whatever the machine does.
## bench-bursts: the burst engines alone (wire.Client.SendBurst, engine-only) and the Go benchmarks (about 3 minutes).
## bench-soak: soak throughput beside raw vegeta, peak memory of a million-attempt soak, certification wall time (about 8 minutes).
bench:
	$(MAKE) bench-product
	$(MAKE) bench-bursts
	$(MAKE) bench-soak

bench-product:
	$(GO) run ./bench/cmd/productbench -bursts 100 -link-bursts 50 -n 8,32 -protocols http1,h2,h2tls -links loopback,lan,wan -busy 2 -max 18m -write BENCHMARKS.md

bench-soak: postgres
	$(GO) run ./bench/cmd/soakbench -runs 3 -write BENCHMARKS.md

bench-bursts:
	$(GO) run ./bench/cmd/burstbench -bursts 200 -runs 3 -n 8,32 -gotest ./bench/ -write BENCHMARKS.md

## bench-merge: `idemcheck check` merging 4 shard histories of ATTEMPTS attempts in all (default 10000000), written by
## bench/cmd/soakhistories into MERGE_DIR (default a new temporary folder; about 870 bytes an attempt, 8.7 GB for 10
## million), with its wall time, CPU time and peak RSS from GNU time; the histories are deleted afterwards. Not part of
## bench: the figures go into BENCHMARKS.md (Sharded soak) by hand, beside the load average it prints.
ATTEMPTS ?= 10000000
bench-merge:
	$(GO) build $(BUILDFLAGS) -o bin/idemcheck ./cmd/idemcheck
	@d="$${MERGE_DIR:-$$(mktemp -d)}"; mkdir -p "$$d" && trap 'rm -f "$$d"/soak-*.jsonl' EXIT && \
	$(GO) run ./bench/cmd/soakhistories -attempts $(ATTEMPTS) -shards 4 -dir "$$d" && du -sh "$$d" && uptime && \
	( cd "$$d" && /usr/bin/time -v $(CURDIR)/bin/idemcheck check 'soak-*.jsonl' >/dev/null 2>"$$d/check.err"; \
	  c=$$?; grep -E 'Elapsed|User time|System time|Maximum resident' "$$d/check.err"; test $$c -le 1 ) && uptime
