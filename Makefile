# snowflake: Snowflake IDs for PostgreSQL, in C++ (PGXS build)

EXTENSION  = snowflake
MODULE_big = snowflake
OBJS       = src/core.o src/atomicgen.o src/statefile.o src/settings.o src/state.o src/origin.o \
             src/seqstart.o src/layouts.o src/fastpath.o src/snowflake.o src/etcd.o src/registry.o
# relative to the source folder, also in out-of-tree builds
DATA       = $(patsubst $(srcdir)/%,%,$(wildcard $(srcdir)/sql/snowflake--*.sql))
PGFILEDESC = "snowflake - Snowflake ID generator"

PG_CONFIG ?= pg_config

# -Wall -Wextra for our code; PostgreSQL's own headers are included as system
# headers (-isystem) so that their warnings under C++ (unused parameters in
# inline functions, "register") do not drown ours.
PG_CXXFLAGS = -std=c++17 -Wall -Wextra -fno-exceptions
PG_CPPFLAGS = -I$(srcdir)/src -isystem $(shell $(PG_CONFIG) --includedir-server)

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

# the registry's etcd client (etcd.cpp)
SHLIB_LINK += -lcurl

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
BITCODE_CXXFLAGS += -std=c++17 -Wno-register -I$(srcdir)/src

# GoogleTest unit tests of the core (no server involved).
# (etcd_test: the registry client's JSON reader, base64 and endpoint list)
test/unit/core_test: test/unit/core_test.cpp src/core.cpp src/core.hpp src/statefile.cpp src/statefile.hpp \
		test/unit/etcd_test.cpp src/etcd.cpp src/etcd.hpp
	$(CXX) -std=c++17 -Wall -Wextra -O1 -g -I$(srcdir)/src -o $@ \
		test/unit/core_test.cpp src/core.cpp src/statefile.cpp \
		test/unit/etcd_test.cpp src/etcd.cpp -lcurl -lgtest -lgtest_main -pthread

# The lock-free generator's tests, many threads on one word, under
# ThreadSanitizer (a data race or a failed property fails the run).
test/unit/atomicgen_test: test/unit/atomicgen_test.cpp src/atomicgen.cpp src/atomicgen.hpp src/core.cpp src/core.hpp
	$(CXX) -std=c++17 -Wall -Wextra -O1 -g -fsanitize=thread -I$(srcdir)/src -o $@ \
		test/unit/atomicgen_test.cpp src/atomicgen.cpp src/core.cpp -lgtest -lgtest_main -pthread

tsancheck: test/unit/atomicgen_test
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" test/unit/atomicgen_test

unitcheck: test/unit/core_test tsancheck
	test/unit/core_test

prove_installcheck_snowflake:
	$(prove_installcheck)

.PHONY: unitcheck tsancheck prove_installcheck_snowflake
