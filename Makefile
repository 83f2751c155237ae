# kneecap — see README.md. `make demo` and `make test` are the two set-up commands.
GO      ?= go
BIN     := bin/kneecap
FUZZTIME ?= 30s

.PHONY: build test demo bench fuzz lint clean

build:
	$(GO) build -o $(BIN) ./cmd/kneecap

# test: the whole suite, as CI runs it (gofmt check + go vet + go test -race).
test: lint
	$(GO) test -race -count=1 -timeout 15m ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# demo: a real sweep against the built-in simulator; writes charts and a report.
demo: build
	./$(BIN) sweep -o runs/demo

# bench: benchmarks of the hot paths and the end-to-end load benchmark.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# fuzz: every fuzz target for FUZZTIME each.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin runs
