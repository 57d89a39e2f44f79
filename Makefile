# snowflake: Snowflake IDs for PostgreSQL, in C++ (PGXS build)

EXTENSION  = snowflake
MODULE_big = snowflake
# in layer order (see src/snowflake.cpp): core, settings, state, registry, SQL
OBJS       = src/layout.o src/generator.o src/atomicgen.o src/textform.o src/shardlist.o \
             src/records.o src/statefile.o \
             src/settings.o src/seqstart.o \
             src/recorded.o src/fastpath.o src/shmem.o src/wal.o src/mark.o src/history.o \
             src/etcd_json.o src/etcd.o src/backend_etcd.o src/backend_pg.o src/registry.o src/lease.o \
             src/generate.o src/backfill.o src/decode.o src/partitions.o src/layouts.o src/stats.o src/metrics.o src/origin.o \
             src/snowflake.o
# relative to the source folder, also in out-of-tree builds
# (and the secondary control files of older versions: snowflake--1.0.control)
# (and the tables of the PostgreSQL registry, for its database: not an extension script)
DATA       = $(patsubst $(srcdir)/%,%,$(wildcard $(srcdir)/sql/snowflake--*.sql) \
                                     $(wildcard $(srcdir)/sql/snowflake--*.control)) \
             sql/snowflake_registry.sql
PGFILEDESC = "snowflake - Snowflake ID generator"

PG_CONFIG ?= pg_config

# -Wall -Wextra for our code; PostgreSQL's own headers are included as system
# headers (-isystem) so that their warnings under C++ (unused parameters in
# inline functions, "register") do not drown ours.
PG_CXXFLAGS = -std=c++17 -Wall -Wextra -fno-exceptions
PG_CPPFLAGS = -I$(srcdir)/src -isystem $(shell $(PG_CONFIG) --includedir-server) \
              -isystem $(shell $(PG_CONFIG) --includedir)

# pg_regress runs on a temporary instance that preloads the library; with
# REGRESS_INSTANCE=existing it uses the server PGHOST/PGPORT name instead,
# which must include test/regress.conf (debian/tests/installcheck does).
REGRESS      = setup decode nextval shards ranges partitions text stats settings units seqstart layouts convert
REGRESS_INSTANCE ?= temp
ifeq ($(REGRESS_INSTANCE),temp)
REGRESS_OPTS = --temp-instance=./tmp_check_regress \
               --temp-config=$(srcdir)/test/regress.conf
endif

TAP_TESTS   = 1
PROVE_TESTS ?= test/t/*.pl

EXTRA_CLEAN = tmp_check_regress tmp_check results regression.diffs \
              regression.out test/unit/core_test test/unit/atomicgen_test

# the registry's etcd client (etcd.cpp) and its PostgreSQL backend (backend_pg.cpp)
SHLIB_LINK += -lcurl -lpq

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Out-of-tree (VPATH) builds, as Debian's pg_buildext makes: objects go to
# src/ under the build folder.
ifdef VPATH
$(shell mkdir -p src test/unit)
endif

# Link with the C++ compiler so the library depends on libstdc++ for real.
override COMPILER = $(CXX) $(CFLAGS)
# JIT bitcode is compiled by clang without PG_CXXFLAGS.
BITCODE_CXXFLAGS += -std=c++17 -Wno-register -I$(srcdir)/src -I$(shell $(PG_CONFIG) --includedir)

# GoogleTest unit tests of the core (no server involved).
# (pgtarget_test: what the PostgreSQL registry makes of a connection string;
# etcd_test: the registry client's JSON lookups, base64 and endpoint list;
# the JSON parser and base64 are PostgreSQL's, from libpgcommon, built as
# frontend code: -DFRONTEND)
PG_PKGLIBDIR := $(shell $(PG_CONFIG) --pkglibdir)
PG_INCLUDEDIR_SERVER := $(shell $(PG_CONFIG) --includedir-server)
CORE_SRCS = src/layout.cpp src/generator.cpp src/textform.cpp src/shardlist.cpp src/records.cpp
test/unit/core_test: test/unit/core_test.cpp $(CORE_SRCS) src/*.hpp src/statefile.cpp \
		test/unit/etcd_test.cpp src/etcd.cpp src/etcd.hpp src/etcd_json.cpp src/etcd_json.hpp \
		test/unit/pgtarget_test.cpp src/backend_pg.cpp
	$(CXX) -std=c++17 -Wall -Wextra -Wno-register -O1 -g -DFRONTEND -I$(srcdir)/src \
		-isystem $(PG_INCLUDEDIR_SERVER) -isystem $(shell $(PG_CONFIG) --includedir) -o $@ \
		test/unit/core_test.cpp $(CORE_SRCS) src/statefile.cpp \
		test/unit/etcd_test.cpp src/etcd.cpp src/etcd_json.cpp \
		test/unit/pgtarget_test.cpp src/backend_pg.cpp \
		-L$(PG_PKGLIBDIR) -lpgcommon -lpgport -lcurl -lpq -lgtest -lgtest_main -pthread -lm

# The lock-free generator's tests, many threads on one word, under
# ThreadSanitizer (a data race or a failed property fails the run).
test/unit/atomicgen_test: test/unit/atomicgen_test.cpp src/atomicgen.cpp src/atomicgen.hpp $(CORE_SRCS) src/*.hpp
	$(CXX) -std=c++17 -Wall -Wextra -O1 -g -fsanitize=thread -I$(srcdir)/src -o $@ \
		test/unit/atomicgen_test.cpp src/atomicgen.cpp $(CORE_SRCS) -lgtest -lgtest_main -pthread

tsancheck: test/unit/atomicgen_test
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" test/unit/atomicgen_test

unitcheck: test/unit/core_test tsancheck
	test/unit/core_test

prove_installcheck_snowflake:
	$(prove_installcheck)

.PHONY: unitcheck tsancheck prove_installcheck_snowflake
