/* Internal to libflare: the C side's helpers that the Go side calls. Not
 * installed; the public interface is flare.h. */
#ifndef FLARE_INTERNAL_H
#define FLARE_INTERNAL_H

#include <stddef.h>

/* flare_set_error stores a copy of the n bytes at p as this thread's last
 * error message. */
void flare_set_error(const char *p, size_t n);

#endif
