# keel — the two commands a newcomer needs:
#   make serve   set up, build, and serve a model over HTTP (MODEL=path.gguf to choose one)
#   make test    set up, build, and run every test
# Others: make build, make run, make sanitize-test (ASan+UBSan), make fuzz, make fuzz-schema, make bench.

BUILD ?= build
JOBS ?= $(shell nproc)
MODEL ?=
PROMPT ?= Once upon a time

.PHONY: setup configure build test run serve sanitize-test fuzz fuzz-schema bench clean

setup:
	./scripts/setup.sh

configure: setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# A test that hangs fails after TEST_TIMEOUT seconds instead of holding the run (the whole
# default suite takes under 10 minutes on 2 cores).
TEST_TIMEOUT ?= 900
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE soak --timeout $(TEST_TIMEOUT)

run: build
	./$(BUILD)/keel run -m $(if $(MODEL),$(MODEL),../shared/models/stories260K.gguf) -p "$(PROMPT)" -n 64

# The default model is generated once (random weights: the server says so at start-up).
DEMO_MODEL ?= $(BUILD)/demo-random.gguf
SERVE_ARGS ?=
serve: build
	@if [ -z "$(MODEL)" ] && [ ! -f "$(DEMO_MODEL)" ]; then ./$(BUILD)/keel make-model --preset demo -o $(DEMO_MODEL); fi
	./$(BUILD)/keel serve -m $(if $(MODEL),$(MODEL),$(DEMO_MODEL)) $(SERVE_ARGS)

# Sanitizer build: the same tests under AddressSanitizer + UndefinedBehaviorSanitizer.
# Only the modules below are built and run under the sanitizers by default (CI time);
# SAN_LABELS / SAN_TARGETS widen it.
SAN_LABELS ?= core|gguf|tensor|kv|kernels|model|engine|sampling|chat
SAN_TARGETS ?= test_core test_gguf test_tensor test_kv test_kernels test_model test_engine test_sampling test_chat
sanitize-test: setup
	cmake -S . -B build-san -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEEL_SANITIZE=ON -DKEEL_BUILD_BENCH=OFF
	cmake --build build-san -j $(JOBS) --target $(SAN_TARGETS)
	ctest --test-dir build-san --output-on-failure -j $(JOBS) -L '$(SAN_LABELS)' -LE soak --timeout $(TEST_TIMEOUT)

fuzz: setup
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEEL_FUZZ=ON -DKEEL_BUILD_TESTS=OFF -DKEEL_BUILD_BENCH=OFF
	cmake --build build-fuzz -j $(JOBS) --target fuzz_gguf
	# Seed corpus: every real file, named by its path (the reference sets all call theirs model.gguf).
	mkdir -p build-fuzz/corpus && for f in ../shared/models/*.gguf ../shared/reference/*/model.gguf ../shared/reference/vocab/*.gguf; do \
	  [ -f "$$f" ] && cp -f "$$f" "build-fuzz/corpus/$$(echo "$$f" | sed 's|^\.\./shared/||; s|/|_|g')"; done; true
	./build-fuzz/fuzz/fuzz_gguf -max_total_time=$(or $(FUZZ_SECONDS),600) -max_len=$(or $(FUZZ_MAX_LEN),65536) -rss_limit_mb=4096 build-fuzz/corpus

# JSON Schema compiler + constrained-decoding checker (request input), seeded from fuzz/schema_seeds.
fuzz-schema: setup
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEEL_FUZZ=ON -DKEEL_BUILD_TESTS=OFF -DKEEL_BUILD_BENCH=OFF
	cmake --build build-fuzz -j $(JOBS) --target fuzz_schema
	mkdir -p build-fuzz/schema-corpus && cp -f fuzz/schema_seeds/* build-fuzz/schema-corpus/
	./build-fuzz/fuzz/fuzz_schema -max_total_time=$(or $(FUZZ_SECONDS),600) -max_len=2048 -timeout=10 -rss_limit_mb=4096 build-fuzz/schema-corpus

bench: build
	./$(BUILD)/bench/keel_bench_kernels

clean:
	rm -rf $(BUILD) build-san build-fuzz
