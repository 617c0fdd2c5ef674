/* One-shot gzip with zlib: deflateBound sizes the output, one deflate call. */
#include "gzip.h"

#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

#include "macro.h"

int gzip_compress(const void *data, size_t len, int level, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *out = NULL;
	z_stream zs = {0};
	uLong bound;
	int r;

	if (len > UINT32_MAX) {
		return -EFBIG;
	}
	/* windowBits 15 + 16: a gzip header and trailer instead of zlib's */
	if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		return -ENOMEM;
	}
	bound = deflateBound(&zs, (uLong)len);
	out = malloc(bound);
	if (!out) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)out;
	zs.avail_out = (uInt)bound;
	r = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (r != Z_STREAM_END) {
		return -EIO;
	}
	*ret_len = zs.total_out;
	*ret = TAKE_PTR(out);
	return 0;
}
