/*
 * asan_initfirst.c: preloaded after libasan into the servers of make
 * sanitizecheck (scripts/sanitizecheck.sh), to start AddressSanitizer before
 * any other library's constructor runs.
 *
 * Debian's postgres (and psql, initdb) load libp11-kit through libldap and
 * GnuTLS; p11-kit's constructor calls newlocale(), which holds glibc's
 * locale lock while it allocates.  With libasan merely preloaded, that first
 * malloc starts ASan, whose start takes the same lock: the lock is left in a
 * state that hangs the process at its next bindtextdomain() (postgres -V
 * never returns).  Linked with -z initfirst, this object's constructor runs
 * before every other object's, and starts ASan while no lock is held.
 */
extern void __asan_init(void);

__attribute__((constructor)) static void
asan_init_first(void)
{
	__asan_init();
}
