/* A message written into a caller's fixed buffer: how the layers below
 * daemon/ hand an error's detail up instead of logging it. */
#pragma once

#include <stdarg.h>
#include <stddef.h>

#include "macro.h"

/* Format into buf (len bytes, always terminated when len > 0). Returns r, so
 * that `return errstr_set(err, len, -EINVAL, "...")` reads as one step. */
int errstr_set(char *buf, size_t len, int r, const char *fmt, ...) _printf_(4, 5);
