#ifndef CBEARERD_SYSTEM_SHIM_H
#define CBEARERD_SYSTEM_SHIM_H

#include <sys/prctl.h>

/* prctl is variadic, which Swift cannot call: one wrapper per use. */
static inline int bearerd_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL);
}

#endif
