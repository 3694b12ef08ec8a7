# ingest: see README.md. Everything here works on a fresh machine: Postgres comes from the
# machine's binaries (installed with apt-get when missing) via scripts/pg.sh, unless DATABASE_URL
# points at a server of your own.

GO      ?= go
BIN     := bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build test demo lint bench clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ingest ./cmd/ingest
	$(GO) build -o $(BIN)/fakes ./cmd/fakes

## test: every test, with the race detector, against a real Postgres.
test:
	scripts/with-pg.sh $(GO) test -race -count=1 ./...

## demo: the main jobs end to end against the local fakes, then `ingest status`.
demo: build
	scripts/with-pg.sh scripts/demo.sh

## lint: gofmt, go vet and staticcheck (from the Go module proxy).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

## bench: the benchmarks behind docs/benchmarks.md.
bench:
	scripts/with-pg.sh $(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN)
	scripts/pg.sh stop .pg
