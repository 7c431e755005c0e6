# greenreplay - deterministic trace-and-replay tests for greenlets and profilers.
# `make help` lists the targets.

PYTHON    ?= /usr/bin/python3
CC        ?= cc
BUILD     ?= build
CFLAGS    ?= -O2 -g
WARN      := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
# replay/ is grouped by concern (docs/ARCHITECTURE.md): read/ (decoding),
# rules/ (the checker), report/ (text, JSON, HTML), repro/ (script, reduce,
# diff, edit), util/ (buffers, id maps); main.c and the commands' glue on top.
REPLAY_DIRS := replay replay/read replay/util replay/rules replay/report replay/repro
REPLAY_HDR := $(wildcard $(addsuffix /*.h,$(REPLAY_DIRS)))
CPPFLAGS  += -Itracer $(addprefix -I,$(REPLAY_DIRS))
LDLIBS    := -lz -lzstd -ljansson -lm

# Replayer (pure C, no Python).
FORMAT_SRC := tracer/format.c tracer/writer.c
REPLAY_SRC := $(filter-out replay/main.c,$(wildcard $(addsuffix /*.c,$(REPLAY_DIRS))))
REPLAY_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(REPLAY_SRC) $(FORMAT_SRC))
CLI        := $(BUILD)/greenreplay

# Recorder extension, built for $(PYTHON).  Several interpreters can share
# $(BUILD)/python/greenreplay: each gets its own EXT_SUFFIX.
PY_INC     := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
PY_SUFFIX  := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
EXT_SRC    := $(filter-out tracer/format.c tracer/writer.c,$(wildcard tracer/*.c))
PKG_DIR    := $(BUILD)/python/greenreplay
EXT        := $(PKG_DIR)/_greenreplay$(PY_SUFFIX)
PKG_PY     := $(patsubst tracer/greenreplay/%,$(PKG_DIR)/%,$(wildcard tracer/greenreplay/*.py tracer/greenreplay/boot/*.py tracer/greenreplay/profilers/*.py))

# Build identity (`greenreplay --version`): the tree's `git describe` and a
# hash of the recorder's sources (exactly the extension's prerequisites, so
# the recorder is never rebuilt for it).  Both go into the recorder's build
# marker (tracer/buildid.c) and into version.o, which $(BUILD)/build-id
# (rewritten only when they change) rebuilds.
GR_BUILD_ID := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
GR_RECORDER_SRC := $(shell cat $(sort $(filter-out tracer/format.c tracer/writer.c,$(wildcard tracer/*.c)) tracer/format.c tracer/writer.c $(wildcard tracer/*.h)) 2>/dev/null | sha256sum | cut -c1-12)
$(shell mkdir -p $(BUILD) && (echo '$(GR_BUILD_ID) $(GR_RECORDER_SRC)' | cmp -s - $(BUILD)/build-id || echo '$(GR_BUILD_ID) $(GR_RECORDER_SRC)' >$(BUILD)/build-id))

# The debug build of CPython that `make test` also runs the recorder under
# (Debian's python3.11-dbg, installed by ci/setup.sh).
DEBUG_PYTHON ?= /usr/bin/python3.11d

UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))

.PHONY: all cli ext deps setup check sizes demo test unit recorder-test integration integration-debug valgrind tsan helgrind bench bench-doc stall clean help \
        install uninstall \
        matrix matrix-golden matrix-screenshot browser-test mutants peer fuzz fuzz-build asan profilers scale \
        transparency peer-full realworld
all: cli ext

help:
	@echo "greenreplay make targets:"
	@echo "  make              build $(CLI) and the recorder for PYTHON=$(PYTHON)"
	@echo "                    (make all; make cli: the CLI alone; make ext: the recorder alone)"
	@echo "  make check        the fast loop: build, make sizes, make unit, make recorder-test,"
	@echo "                    then the host-only integration scripts (lines marked host in"
	@echo "                    tests/integration/suites.txt); no apt, no pip, no root, no network"
	@echo "                    (run make deps once); CHECK_JOBS scripts at a time (default 2)"
	@echo "  make sizes        source limits (tests/sizes.py, its self-test first): no function in"
	@echo "                    tracer/ or replay/ over 150 lines, no struct over 30 fields, no"
	@echo "                    PY_VERSION_HEX test outside tracer/compat.h (allowed for now:"
	@echo "                    tests/sizes_exceptions.txt)"
	@echo "  make demo         install what is missing (make deps), build, record and check every"
	@echo "                    fixture (ci/demo.sh)"
	@echo "  make test         install what is missing, build, then make sizes, make unit, make"
	@echo "                    recorder-test, make integration and make integration-debug (the full suite)"
	@echo "  make unit         every cmocka unit test, tests/unit/test_*.c (format, reader, checker,"
	@echo "                    commands, recorder's writer, sampler, registry...)"
	@echo "  make recorder-test  the recorder's behaviour in pytest (tests/recorder/): profile events,"
	@echo "                    switches, throws, the program's hooks, footholds, threads; each test"
	@echo "                    records in process and reads the trace back (tests/recorder/grtrace.py)"
	@echo "  make integration  build, then every script of tests/integration/suites.txt in order"
	@echo "                    (tests/integration/suite.sh): it goes on after a failing script and"
	@echo "                    ends with one line per script (PASS/FAIL, seconds); pyenv"
	@echo "                    interpreters, Debian roots, pip into fresh venvs and the mutant"
	@echo "                    greenlets (tests/mutants/run.sh) included; the scripts, in order"
	@echo "                    (* also in make check):"
	@awk '!/^#/ && NF { sub(/^integration\//, "", $$1); printf "%s%s%s", (n++ % 5 ? " " : (n > 1 ? "\n" : "") "                    "), $$1, ($$3 == "host" ? "*" : "") } END { print "" }' tests/integration/suites.txt
	@echo "  make integration-debug  the recorder built for DEBUG_PYTHON (Py_DEBUG: reference counts,"
	@echo "                    GIL, CPython's assertions), tests/integration/debug.sh (a subset of the"
	@echo "                    integration tests, references kept after stop()) and matrix_verdicts.sh"
	@echo "                    (the matrix's crash verdicts on synthetic cells)"
	@echo "  make golden       re-record the golden dumps (tests/integration/run.sh --update; review"
	@echo "                    the diff before committing)"
	@echo "  make valgrind     unit tests, and check, dump, script, diff and export of every fixture"
	@echo "                    trace (recorded by ci/demo.sh if missing), under memcheck (tests/valgrind.sh)"
	@echo "  make fuzz         libFuzzer (clang, ASan+UBSan) over reader, check, dump, stats, script,"
	@echo "                    diff and the side channel for FUZZ_SECONDS (default 60), inputs of"
	@echo "                    tests/fuzz/regressions first (tests/fuzz/run.sh); fails on a finding"
	@echo "  make fuzz-build   only build the two libFuzzer harnesses (build/fuzz/)"
	@echo "  make asan         CLI and recorder built with ASan+UBSan (in build/asan), the unit tests"
	@echo "                    and the integration tests run.sh, record_modes.sh, script_roundtrip.sh,"
	@echo "                    check_verdicts.sh, observer.sh, faults.sh and export.sh run with them"
	@echo "                    (ci/asan.sh)"
	@echo "  make tsan         the registry, sample-ring and sampler race tests (test_registry,"
	@echo "                    test_handoff, test_sampler) under ThreadSanitizer"
	@echo "  make helgrind     the registry race test (test_registry) under valgrind's helgrind"
	@echo "  make bench        every performance goal from one run (tests/bench/bench.sh): recorder"
	@echo "                    cost per profile event, trace sizes, the writer's cost, the switch-path"
	@echo "                    and sampler benchmarks (tests/bench/run.sh); four workloads under no"
	@echo "                    profiler, the empty C one, greenreplay, cProfile, yappi and coverage"
	@echo "                    (tests/bench/side_by_side.py); instructions per event and per switch"
	@echo "                    (tests/bench/instr_cost.sh); the replayer on a BENCH_EVENTS-record"
	@echo "                    synthetic trace (default 100000000, cached in ~/.cache/greenreplay/bench;"
	@echo "                    tests/bench/replay_cost.sh); greenlet's suite recorded (peer_size.sh);"
	@echo "                    then the goals' table in build/bench/summary.md (25 min on 2 CPUs"
	@echo "                    at load average 5 to 9; BENCH_QUICK=1 for a smaller look)"
	@echo "  make bench-doc    paste build/bench/summary.md into docs/PERFORMANCE.md between its markers"
	@echo "  make stall        sampler stall benchmark: every mode, N=0/2000, 5 runs x 200 samples,"
	@echo "                    check --stall verdicts, paired ratios (ci/stall.sh; ~9 min loaded);"
	@echo "                    then greenreplay stall's black-box verdicts (about 1 min)"
	@echo "  make scale        1 M greenlets (with and without the sampler), 10,000 threads, a"
	@echo "                    100 M-event recording checked and dumped: time and peak memory"
	@echo "                    (ci/scale.sh; ~20 min; SCALE_ARGS=...)"
	@echo "  make matrix       every fixture in every test environment (ci/matrix.sh; provisions them"
	@echo "                    first): docs/matrix.md and build/matrix/{index.html,matrix.json,junit.xml}"
	@echo "  make profilers    the profiler axis: fixtures x environments x profilers, greenreplay conform"
	@echo "                    in each (ci/profilers.sh; PROFILERS_ARGS='--quick' is what .ci/run runs)"
	@echo "  make matrix-golden  record goldens of the matrix environments where two recordings are identical"
	@echo "  make matrix-screenshot  build/matrix/screenshot.png of the HTML matrix (headless Chromium)"
	@echo "  make browser-test exports and check --html opened in headless Chromium and speedscope"
	@echo "                    (installs them: ci/browser-setup.sh); build/browser/"
	@echo "  make mutants      build the mutant greenlets (ci/mutants/*.patch) and show each one's bug"
	@echo "                    class to a plain sys.setprofile program, without the recorder"
	@echo "                    (tests/mutants/run.sh --prepare)"
	@echo "  make peer         greenlet's own test suite unrecorded and under greenreplay record, per-test"
	@echo "                    outcomes compared; slowdown and trace size (ci/peer.sh; PEER_ARGS='--env trixie-3.13')"
	@echo "  make transparency every probe (tests/transparency/probes) and fixture, unrecorded and recorded"
	@echo "                    in whole-program and --manual mode, both --switches modes: the program's"
	@echo "                    output must not change (tests/transparency/run.py; ~20 min loaded, 2,000"
	@echo "                    forks included; TRANSPARENCY_ARGS='--env trixie-3.13' for a root)"
	@echo "  make peer-full    make peer in ring and file mode (--max-size) on the host, trixie-3.13,"
	@echo "                    sid-3.14 and sid-3.15 (ci/peer-full.sh; PEER_FULL_ARGS='--quick': file"
	@echo "                    mode on the host, three modules, what .ci/run adds)"
	@echo "  make deps         apt packages the project needs (ci/setup.sh; root or sudo);"
	@echo "                    make setup is the same"
	@echo "  make realworld    the precision benchmark: tests/realworld/*.py (programs from public"
	@echo "                    reports, each with its right verdict) recorded whole-program and --manual,"
	@echo "                    passive and callback, in every environment found; confusion table,"
	@echo "                    precision and recall; fails on a wrong verdict (REALWORLD_ARGS=--quick)"
	@echo "  make install      install the CLI, the recorder for PYTHON and the man page into"
	@echo "                    \$$(DESTDIR)\$$(PREFIX) (PREFIX=$(PREFIX)); pip install . is the other way"
	@echo "  make uninstall    remove what make install put there"
	@echo "  make clean        remove $(BUILD)/"
	@echo "  make help         this list"
	@echo "Variables: PYTHON=path (default /usr/bin/python3), BUILD=dir, CC=cc,"
	@echo "  DEBUG_PYTHON=path (default /usr/bin/python3.11d),"
	@echo "  MATRIX_ARGS='...' options of ci/matrix.sh (e.g. --envs 'sid-*' --env NAME=PYTHON),"
	@echo "  PEER_ARGS='...' options of ci/peer.sh (e.g. --env trixie-3.13, --full),"
	@echo "  PROFILERS_ARGS='...' options of ci/profilers.sh (e.g. --quick, --profilers yappi),"
	@echo "  SCALE_ARGS='...' options of ci/scale.sh, FUZZ_SECONDS=N (make fuzz),"
	@echo "  BENCH_EVENTS=N and BENCH_QUICK=1 (make bench), CHECK_JOBS=N (make check), PREFIX=dir and DESTDIR=dir"
	@echo "  (make install)"
	@echo "  REALWORLD_ARGS='...' options of tests/realworld/run.py (--quick, --only NAME, --host-only)"

cli: $(CLI)
ext: $(EXT) $(PKG_PY)

$(BUILD)/obj/%.o: %.c $(wildcard tracer/*.h) $(REPLAY_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -c -o $@ $<

$(CLI): $(BUILD)/obj/replay/main.o $(REPLAY_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(EXT): $(EXT_SRC) $(FORMAT_SRC) $(wildcard tracer/*.h)
	@test -n "$(PY_INC)" || { echo "error: $(PYTHON) is not a usable Python interpreter" >&2; exit 2; }
	@test -f "$(PY_INC)/Python.h" || { echo "error: Python.h missing in $(PY_INC) (install the interpreter's -dev package)" >&2; exit 2; }
	@mkdir -p $(PKG_DIR)
	$(CC) $(CPPFLAGS) -I$(PY_INC) $(CFLAGS) $(WARN) -fPIC -shared -fvisibility=hidden \
	    -DGR_BUILD_ID='"$(GR_BUILD_ID)"' -DGR_RECORDER_SRC='"$(GR_RECORDER_SRC)"' -o $@ $(EXT_SRC) $(FORMAT_SRC) -lz -lzstd

$(BUILD)/obj/replay/version.o: $(BUILD)/build-id
$(BUILD)/obj/replay/version.o: CPPFLAGS += -DGR_BUILD_ID='"$(GR_BUILD_ID)"' -DGR_RECORDER_SRC='"$(GR_RECORDER_SRC)"'

$(PKG_DIR)/%.py: tracer/greenreplay/%.py
	@mkdir -p $(dir $@)
	cp $< $@

# The tests' shared headers (trace_builder.h, tb_run.h...) are
# prerequisites, not inputs of the link.
UNIT_HDR := $(wildcard tests/unit/*.h)
$(BUILD)/tests/%: tests/unit/%.c $(REPLAY_OBJ) $(UNIT_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $(filter-out %.h,$^) $(LDLIBS) -lcmocka

# test_handoff races the sampler's sample ring (pure C, two threads).
$(BUILD)/tests/test_handoff: $(BUILD)/obj/tracer/handoff.o
$(BUILD)/tests/test_handoff: LDLIBS += -pthread

# test_sampler: the sampler thread's buffering, with a stub unwinder (pure C).
$(BUILD)/tests/test_sampler: $(BUILD)/obj/tracer/sampler.o $(BUILD)/obj/tracer/registry.o \
                             $(BUILD)/obj/tracer/handoff.o
$(BUILD)/tests/test_sampler: LDLIBS += -pthread

# test_keymap: the recorder's suspension map (pure C).
$(BUILD)/tests/test_keymap: tracer/ptrmap.c tracer/ptrmap.h

# test_registry races the sampler's registry (pure C, two threads).
$(BUILD)/tests/test_registry: $(BUILD)/obj/tracer/registry.o
$(BUILD)/tests/test_registry: LDLIBS += -pthread

# ThreadSanitizer build of test_registry (TSAN_CC: gcc or clang).  TSan
# does not model atomic_thread_fence (gcc says so with -Wtsan); every
# shared field of the registry is atomic, so it still sees every race.
TSAN_CC   ?= $(CC)
TSAN_WARN := $(shell $(TSAN_CC) -Werror -Wno-tsan -E -x c /dev/null >/dev/null 2>&1 && echo -Wno-tsan)
$(BUILD)/tsan/test_registry: tests/unit/test_registry.c tracer/registry.c tracer/registry.h
	@mkdir -p $(dir $@)
	$(TSAN_CC) $(CPPFLAGS) -O1 -g -fsanitize=thread $(WARN) $(TSAN_WARN) -o $@ tests/unit/test_registry.c tracer/registry.c -pthread -lcmocka
$(BUILD)/tsan/test_handoff: tests/unit/test_handoff.c tracer/handoff.c tracer/handoff.h
	@mkdir -p $(dir $@)
	$(TSAN_CC) $(CPPFLAGS) -O1 -g -fsanitize=thread $(WARN) $(TSAN_WARN) -o $@ tests/unit/test_handoff.c tracer/handoff.c -pthread -lcmocka
$(BUILD)/tsan/test_sampler: tests/unit/test_sampler.c tracer/sampler.c tracer/registry.c tracer/handoff.c \
                            tracer/format.c $(wildcard tracer/*.h)
	@mkdir -p $(dir $@)
	$(TSAN_CC) $(CPPFLAGS) -O1 -g -fsanitize=thread $(WARN) $(TSAN_WARN) -o $@ tests/unit/test_sampler.c \
	    tracer/sampler.c tracer/registry.c tracer/handoff.c tracer/format.c -pthread -lcmocka

# libFuzzer harnesses (tests/fuzz/): clang's -fsanitize=fuzzer with ASan and
# UBSan, over the replayer's sources.  `make fuzz` runs them for FUZZ_SECONDS.
FUZZ_CC    ?= clang
FUZZ_SAN   := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
              -fno-sanitize-recover=undefined
FUZZ_OBJ   := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(REPLAY_SRC) $(FORMAT_SRC))
FUZZ_SECONDS ?= 60
$(BUILD)/fuzz/obj/%.o: %.c $(wildcard tracer/*.h) $(REPLAY_HDR)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c -o $@ $<
$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_common.h $(FUZZ_OBJ)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(LDLIBS)

.SECONDARY: $(FUZZ_OBJ)
fuzz-build: $(BUILD)/fuzz/fuzz_trace $(BUILD)/fuzz/fuzz_times

fuzz: fuzz-build all
	FUZZ_SECONDS=$(FUZZ_SECONDS) BUILD=$(BUILD) tests/fuzz/run.sh --python $(PYTHON)

# AddressSanitizer + UBSan build of the CLI, unit tests and recorder in
# build/asan, running the unit and integration tests (ci/asan.sh).
asan: deps
	ci/asan.sh --python $(PYTHON)

deps:
	ci/setup.sh

setup: deps

mutants:
	tests/mutants/run.sh --prepare

peer: deps
	$(MAKE) all
	ci/peer.sh $(PEER_ARGS)

# greenlet's suite in ring and file mode, on the host and the trixie and sid
# roots (ci/peer-full.sh --help; PEER_FULL_ARGS=--quick: file mode, host,
# three modules).
PEER_FULL_ARGS ?=
peer-full: deps
	$(MAKE) all
	ci/peer-full.sh $(PEER_FULL_ARGS)

demo: deps
	$(MAKE) all
	ci/demo.sh --python $(PYTHON)

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done
	python3 tests/bench/summary.py --self-test

# The recorder's behaviour in pytest (tests/recorder/, Debian's
# python3-pytest): each test records in process through
# greenreplay.recording() and reads the trace back with `greenreplay dump`.
# About a second; in make check and make test.
recorder-test: all
	BUILD=$(BUILD) $(PYTHON) -B -m pytest -q -p no:cacheprovider tests/recorder

# The integration scripts are listed in tests/integration/suites.txt;
# suite.sh runs them all, goes on after a failure and ends with a summary.
integration: all $(BUILD)/bench/gentrace
	tests/integration/suite.sh --python $(PYTHON) full

# The fast loop: no apt, no pip, no root, no network (make deps first).
# CHECK_JOBS scripts run at a time.
CHECK_JOBS ?= 2
check: all $(BUILD)/bench/gentrace
	$(MAKE) sizes
	$(MAKE) unit
	$(MAKE) recorder-test
	tests/integration/suite.sh --python $(PYTHON) --jobs $(CHECK_JOBS) host

# The recorder built for the debug interpreter too (its own EXT_SUFFIX, so
# beside the release build in $(BUILD)/python/greenreplay).
integration-debug: cli
	$(MAKE) ext PYTHON=$(DEBUG_PYTHON)
	tests/integration/debug.sh --python $(DEBUG_PYTHON)
	tests/integration/matrix_verdicts.sh

# Source limits (tests/sizes.py): its self-test on made-up files first, so a
# check that can no longer fail fails here.
sizes:
	python3 tests/sizes.py --self-test
	python3 tests/sizes.py

golden: all
	tests/integration/run.sh --python $(PYTHON) --update

test: deps
	$(MAKE) all
	$(MAKE) sizes
	$(MAKE) unit
	$(MAKE) recorder-test
	$(MAKE) integration
	$(MAKE) integration-debug

tsan: $(BUILD)/tsan/test_registry $(BUILD)/tsan/test_handoff $(BUILD)/tsan/test_sampler
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 $(TSAN_OPTIONS)" $(BUILD)/tsan/test_registry
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 $(TSAN_OPTIONS)" $(BUILD)/tsan/test_handoff
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 $(TSAN_OPTIONS)" $(BUILD)/tsan/test_sampler

# helgrind: no suppressions; test_registry itself excludes only the
# seqlock's atomic slots from helgrind's checks (see the test).
helgrind: $(BUILD)/tests/test_registry
	valgrind -q --tool=helgrind --error-exitcode=98 $(BUILD)/tests/test_registry

# The fixture traces come from the demo run (recorded if missing).
valgrind: all $(UNIT_BIN)
	@ls $(BUILD)/traces/*/*.grt >/dev/null 2>&1 || ci/demo.sh --python $(PYTHON) >/dev/null || true
	tests/valgrind.sh $(UNIT_BIN)

# The replayer's figures (check's peak memory and events/s, dump's events/s)
# on a synthetic trace of BENCH_EVENTS records (tests/bench/gentrace.c),
# cached in ~/.cache/greenreplay/bench.
BENCH_EVENTS ?= 100000000
$(BUILD)/bench/gentrace: tests/bench/gentrace.c $(REPLAY_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $^ $(LDLIBS)

# make bench: every part's figures, then the goals from that one run in
# $(BUILD)/bench/summary.md (tests/bench/bench.sh --help); make bench-doc
# pastes that table into docs/PERFORMANCE.md.
BENCH_QUICK ?=
bench: all $(BUILD)/bench/gentrace
	BUILD=$(BUILD) BENCH_QUICK=$(BENCH_QUICK) tests/bench/bench.sh --python $(PYTHON) --events $(BENCH_EVENTS)

bench-doc:
	python3 tests/bench/summary.py --paste $(BUILD)/bench/summary.md docs/PERFORMANCE.md

# The transparency oracle, full set (tests/transparency/run.py --help).
TRANSPARENCY_ARGS ?=
transparency: all
	tests/transparency/run.py --python $(PYTHON) $(TRANSPARENCY_ARGS)

# The compatibility matrix (docs/matrix.md): ci/matrix.sh --help.
MATRIX_ARGS ?=
matrix: deps
	$(MAKE) all
	ci/matrix.sh $(MATRIX_ARGS)

# The profiler axis (docs/matrix.md, "Profiler axis"): ci/profilers.sh --help.
PROFILERS_ARGS ?=
profilers: deps
	$(MAKE) all
	ci/profilers.sh $(PROFILERS_ARGS)

matrix-golden: deps
	$(MAKE) all
	ci/matrix.sh --update-goldens $(MATRIX_ARGS)

matrix-screenshot:
	ci/matrix-screenshot.sh

# The browser test (tests/browser/run.sh); .ci/run calls it after make test.
browser-test: all
	tests/browser/run.sh --python $(PYTHON)

stall: all
	ci/stall.sh --python $(PYTHON)
	@echo "== greenreplay stall (black box): hold-lock must be flagged, two-phase and seqlock pass"
	build/greenreplay stall --python $(PYTHON) --json build/traces/stall/blackbox.json; \
	  test $$? -eq 1 && $(PYTHON) -c 'import json, sys; v = {s["sampler"]: s["verdict"] for s in json.load(open(sys.argv[1]))["samplers"]}; assert v == {"off": "baseline", "two-phase": "pass", "hold-lock": "flagged", "seqlock": "pass"}, v' build/traces/stall/blackbox.json

# The precision benchmark (tests/realworld/run.py --help).
REALWORLD_ARGS ?=
realworld: all
	tests/realworld/run.py --python $(PYTHON) $(REALWORLD_ARGS)

# Scale tests (ci/scale.sh --help); big traces under ~/.cache/greenreplay/scale.
SCALE_ARGS ?=
scale: all
	ci/scale.sh --python $(PYTHON) $(SCALE_ARGS)

# make install: PREFIX/bin/greenreplay, the recorder package for PYTHON in
# PREFIX/lib/greenreplay/python (found there by `greenreplay record`; run it
# again with another PYTHON to add that interpreter's extension), and the
# man page.  DESTDIR stages the whole tree (packaging).
PREFIX  ?= /usr/local
DESTDIR ?=
INSTALL_LIB := $(DESTDIR)$(PREFIX)/lib/greenreplay/python/greenreplay
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(INSTALL_LIB) $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/greenreplay
	install -d $(INSTALL_LIB)/boot $(INSTALL_LIB)/profilers
	install -m 644 $(filter-out %/boot/sitecustomize.py $(PKG_DIR)/profilers/%,$(PKG_PY)) $(INSTALL_LIB)/
	install -m 644 $(filter %/boot/sitecustomize.py,$(PKG_PY)) $(INSTALL_LIB)/boot/
	install -m 644 $(filter $(PKG_DIR)/profilers/%,$(PKG_PY)) $(INSTALL_LIB)/profilers/
	install -m 755 $(EXT) $(INSTALL_LIB)/
	install -m 644 docs/greenreplay.1 $(DESTDIR)$(PREFIX)/share/man/man1/greenreplay.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/greenreplay $(DESTDIR)$(PREFIX)/share/man/man1/greenreplay.1
	rm -rf $(DESTDIR)$(PREFIX)/lib/greenreplay

clean:
	rm -rf $(BUILD)
