/* gzip (RFC 1952) compression of an in-memory body, for HTTP responses. */
#pragma once

#include <stddef.h>

/* Compress `len` bytes at `data` with zlib `level` (1..9). Returns 0 and a
 * malloc'd gzip stream the caller frees, or -ENOMEM / -EIO. */
int gzip_compress(const void *data, size_t len, int level, char **ret, size_t *ret_len);
