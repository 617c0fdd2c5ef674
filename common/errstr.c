/* A message written into a caller's fixed buffer. */
#include "errstr.h"

#include <stdio.h>

int errstr_set(char *buf, size_t len, int r, const char *fmt, ...)
{
	va_list ap;

	if (!buf || len == 0) {
		return r;
	}
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return r;
}
