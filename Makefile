# idemcheck: `make demo` runs the embedded demo, `make test` the whole test
# suite. Both install what they need on a fresh Debian machine (PostgreSQL
# server binaries) and start nothing that outlives them.

GO ?= go
export PATH := $(PATH):/usr/local/go/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PKGS := ./...

.PHONY: all build demo test vet fmt-check postgres clean

all: build

build:
	$(GO) build -o bin/idemcheck ./cmd/idemcheck
	$(GO) build -o bin/orders ./examples/orders/cmd/orders

## postgres: make sure the PostgreSQL server binaries (initdb, postgres) exist.
postgres:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; else \
		echo "make: installing the PostgreSQL server binaries (apt-get install postgresql)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends postgresql >/dev/null; \
	fi

## demo: certify the example orders API and its check-then-insert twin on a throwaway PostgreSQL.
demo: postgres
	$(GO) run ./cmd/idemcheck demo

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

## test: formatting, vet, and every test with the race detector, on real PostgreSQL and real HTTP over loopback.
test: postgres fmt-check vet
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

clean:
	rm -rf bin
