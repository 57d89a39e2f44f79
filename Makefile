# snowflake: Snowflake IDs for PostgreSQL, in C++ (PGXS build)

EXTENSION  = snowflake
MODULE_big = snowflake
# in layer order, one folder a layer (src/README.md): core, settings, state,
# registry, SQL, then the module itself; make layercheck checks the order
CORE_OBJS     = src/core/layout.o src/core/generator.o src/core/atomicgen.o src/core/textform.o \
                src/core/shardlist.o src/core/records.o src/core/skew.o src/core/statefile.o \
                src/core/hmac.o src/core/publicid.o
SETTINGS_OBJS = src/settings/guc.o src/settings/settings.o src/settings/seqstart.o
STATE_OBJS    = src/state/slots.o src/state/datadir.o src/state/counters.o src/state/fastpath.o src/state/shmem.o src/state/wal.o \
                src/state/layoutpin.o \
                src/state/mark.o src/state/history.o src/state/watermark.o
REGISTRY_OBJS = src/registry/etcd_json.o src/registry/etcd.o src/registry/backend_etcd.o \
                src/registry/pgconn.o src/registry/backend_pg.o src/registry/registry.o src/registry/lease.o
SQL_OBJS      = src/sql/nextval.o src/sql/backfill.o src/sql/decode.o src/sql/partitions.o \
                src/sql/foreign_layouts.o src/sql/stats.o src/sql/metrics.o src/sql/origin.o \
                src/sql/colmax.o src/sql/managed_mark.o src/sql/adopt.o src/sql/public_ids.o src/sql/type.o \
                src/sql/watermark.o
OBJS       = $(CORE_OBJS) $(SETTINGS_OBJS) $(STATE_OBJS) $(REGISTRY_OBJS) $(SQL_OBJS) src/snowflake.o
# relative to the source folder, also in out-of-tree builds
# (and the secondary control files of older versions: snowflake--1.0.control)
# (and the tables of the PostgreSQL registry, for its database: not an extension script)
# The extension's SQL lives in extension/ (sql/ and expected/ hold only the
# pg_regress tests). The install script of the current version is built from
# extension/snowflake.sql, the one file that is edited (so that its history is
# the SQL surface's); released versions' scripts are files of their own and
# never change.
EXTVERSION := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(dir $(firstword $(MAKEFILE_LIST)))snowflake.control)
DATA_built = extension/snowflake--$(EXTVERSION).sql
DATA       = $(filter-out $(DATA_built), \
               $(patsubst $(srcdir)/%,%,$(wildcard $(srcdir)/extension/snowflake--*.sql) \
                                       $(wildcard $(srcdir)/extension/snowflake--*.control))) \
             extension/snowflake_registry.sql
PGFILEDESC = "snowflake - Snowflake ID generator"

PG_CONFIG ?= pg_config

# -Wall -Wextra for our code; PostgreSQL's own headers are included as system
# headers (-isystem) so that their warnings under C++ (unused parameters in
# inline functions, "register") do not drown ours.
PG_CXXFLAGS = -std=c++17 -Wall -Wextra -fno-exceptions
# the sanitizer build of the library (scripts/sanitizecheck.sh) sets SANITIZE
# to its -fsanitize flags; empty otherwise
SANITIZE ?=
PG_CXXFLAGS += $(SANITIZE)
PG_CPPFLAGS = -I$(srcdir)/src -isystem $(shell $(PG_CONFIG) --includedir-server) \
              -isystem $(shell $(PG_CONFIG) --includedir)

# pg_regress runs on a temporary instance that preloads the library; with
# REGRESS_INSTANCE=existing it uses the server PGHOST/PGPORT name instead,
# which must include test/regress.conf (debian/tests/installcheck does).
REGRESS      = setup decode nextval shards ranges partitions text stats settings units seqstart layouts convert type typeexpr typeinput publicids
REGRESS_INSTANCE ?= temp
ifeq ($(REGRESS_INSTANCE),temp)
REGRESS_OPTS = --temp-instance=./tmp_check_regress \
               --temp-config=$(srcdir)/test/regress.conf
endif

TAP_TESTS   = 1
PROVE_TESTS ?= test/t/*.pl

EXTRA_CLEAN = tmp_check_regress tmp_check results regression.diffs \
              regression.out test/unit/core_test test/unit/atomicgen_test \
              test/unit/core_test_san tmp_sanitize

# the registry's etcd client (etcd.cpp) and its PostgreSQL transport (pgconn.cpp);
# public IDs' HMAC-SHA-256 (core/hmac.cpp): OpenSSL's libcrypto, which PostgreSQL links too
SHLIB_LINK += -lcurl -lpq -lcrypto $(SANITIZE)

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Out-of-tree (VPATH) builds, as Debian's pg_buildext makes: objects go to
# src/ under the build folder.
ifdef VPATH
$(shell mkdir -p sql extension src/core src/settings src/state src/registry src/sql test/unit)
endif

# PGXS tracks no header dependencies: every object depends on every header of
# src/, so that a changed struct (public IDs' keys, issue 33) never leaves a
# stale object that lays it out the old way (a heap overrun at server start).
$(OBJS): $(wildcard $(srcdir)/src/*.hpp $(srcdir)/src/*/*.hpp)

# Link with the C++ compiler so the library depends on libstdc++ for real.
override COMPILER = $(CXX) $(CFLAGS)
# JIT bitcode is compiled by clang without PG_CXXFLAGS.
BITCODE_CXXFLAGS += -std=c++17 -Wno-register -I$(srcdir)/src -I$(shell $(PG_CONFIG) --includedir)

# GoogleTest unit tests of the core (no server involved).
# (pgtarget_test: what the PostgreSQL registry makes of a connection string;
# etcd_test: the registry client's JSON lookups, base64 and endpoint list;
# publicid_test: the public IDs' cipher, its HMAC-SHA-256 checked against PostgreSQL's
# pg_hmac (OpenSSL's);
# the JSON parser and base64 are PostgreSQL's, from libpgcommon, built as
# frontend code: -DFRONTEND)
PG_PKGLIBDIR := $(shell $(PG_CONFIG) --pkglibdir)
PG_INCLUDEDIR_SERVER := $(shell $(PG_CONFIG) --includedir-server)
CORE_SRCS = src/core/layout.cpp src/core/generator.cpp src/core/textform.cpp src/core/shardlist.cpp src/core/records.cpp \
		src/core/skew.cpp
# one file of tests per module of src/core/ (atomicgen's are atomicgen_test.cpp, below)
CORE_TESTS = test/unit/layout_test.cpp test/unit/generator_test.cpp test/unit/textform_test.cpp \
		test/unit/shardlist_test.cpp test/unit/records_test.cpp test/unit/statefile_test.cpp \
		test/unit/timebound_test.cpp test/unit/skew_test.cpp
CORE_TEST_SRCS = $(CORE_TESTS) $(CORE_SRCS) src/core/statefile.cpp \
		test/unit/etcd_test.cpp src/registry/etcd.cpp src/registry/etcd_json.cpp \
		test/unit/pgtarget_test.cpp src/registry/pgconn.cpp \
		test/unit/publicid_test.cpp src/core/publicid.cpp src/core/hmac.cpp
CORE_TEST_BUILD = $(CXX) -std=c++17 -Wall -Wextra -Wno-register -O1 -g -DFRONTEND -I$(srcdir)/src \
		-isystem $(PG_INCLUDEDIR_SERVER) -isystem $(shell $(PG_CONFIG) --includedir)
CORE_TEST_LIBS = -L$(PG_PKGLIBDIR) -lpgcommon -lpgport -lcrypto -lcurl -lpq -lgtest -lgtest_main -pthread -lm
test/unit/core_test: $(CORE_TEST_SRCS) test/unit/unit_helpers.hpp src/*/*.hpp
	$(CORE_TEST_BUILD) -o $@ $(CORE_TEST_SRCS) $(CORE_TEST_LIBS)

# The same tests under AddressSanitizer and UndefinedBehaviorSanitizer
# (make sanitizecheck passes SANITIZE_FLAGS).
SANITIZE_FLAGS ?= -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
test/unit/core_test_san: $(CORE_TEST_SRCS) test/unit/unit_helpers.hpp src/*/*.hpp
	$(CORE_TEST_BUILD) $(SANITIZE_FLAGS) -o $@ $(CORE_TEST_SRCS) $(CORE_TEST_LIBS)

# The lock-free generator's tests, many threads on one word, under
# ThreadSanitizer (a data race or a failed property fails the run).
test/unit/atomicgen_test: test/unit/atomicgen_test.cpp src/core/atomicgen.cpp $(CORE_SRCS) src/core/*.hpp
	$(CXX) -std=c++17 -Wall -Wextra -O1 -g -fsanitize=thread -I$(srcdir)/src -o $@ \
		test/unit/atomicgen_test.cpp src/core/atomicgen.cpp $(CORE_SRCS) -lgtest -lgtest_main -pthread

tsancheck: test/unit/atomicgen_test
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" test/unit/atomicgen_test

unitcheck: test/unit/core_test tsancheck
	test/unit/core_test

# The unit tests and the pg_regress suite under ASan and UBSan, the library
# installed into a copy of the PostgreSQL install (scripts/sanitizecheck.sh).
sanitizecheck:
	PG_CONFIG=$(PG_CONFIG) bash $(srcdir)/scripts/sanitizecheck.sh

# The layers of src/ (scripts/layercheck.py; src/README.md): no include runs
# up a layer, the core includes nothing of PostgreSQL, no include circles, no
# function over 150 lines (scripts/funclen.py).
layercheck:
	python3 $(srcdir)/scripts/layercheck.py --self-test $(srcdir)/src

# The SQL edition (issue 34, docs/managed.md): managed/install.sql and
# managed/pg_tle.sql from managed/src/*.sql; both are committed, and the
# release checks (scripts/check-release.py) fail when they differ from a build.
managed:
	bash $(srcdir)/managed/build.sh

$(DATA_built): $(srcdir)/extension/snowflake.sql $(srcdir)/snowflake.control
	cp $< $@

prove_installcheck_snowflake:
	$(prove_installcheck)

.PHONY: unitcheck tsancheck sanitizecheck layercheck managed prove_installcheck_snowflake
