#ifndef CBEARERD_SYSTEM_SHIM_H
#define CBEARERD_SYSTEM_SHIM_H

#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>

/* prctl is variadic, which Swift cannot call: one wrapper per use. */
static inline int bearerd_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL);
}

/* glibc (2.34 and 2.29) declares these only under _GNU_SOURCE, which the Glibc module is built
   without: declared again here, as glibc does, for `auth.command`'s child. */
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
extern int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *actions, const char *path);

/* A child starts with no signal blocked and every signal's default action: bearerd (and the
   test process, through NIO) ignores SIGPIPE, which a child would inherit across exec. */
static inline void bearerd_spawnattr_default_signals(posix_spawnattr_t *attributes) {
    sigset_t none, every;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(attributes, &none);
    sigfillset(&every);
    sigdelset(&every, SIGKILL);
    sigdelset(&every, SIGSTOP);
    posix_spawnattr_setsigdefault(attributes, &every);
}

/* glibc 2.9, _GNU_SOURCE: a pipe whose ends are closed on exec. */
extern int pipe2(int fds[2], int flags);

/* glibc 2.36: a descriptor that becomes readable when the process ends (Linux 5.3). */
extern int pidfd_open(pid_t pid, unsigned int flags);

#endif
