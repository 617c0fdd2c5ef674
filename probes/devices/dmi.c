/* SMBIOS system vendor and product from sysfs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dmi.h"
#include "fileio.h"
#include "macro.h"

void dmi_clean(char *s)
{
	size_t start = 0, len = strlen(s);

	while (start < len && (s[start] == ' ' || s[start] == '\t')) {
		start++;
	}
	while (len > start && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\n')) {
		len--;
	}
	memmove(s, s + start, len - start);
	s[len - start] = '\0';
	for (char *p = s; *p; p++) {
		if (*p < 0x20 || *p > 0x7e) {
			*p = '?';
		}
	}
}

static int read_field(const char *sysfs, const char *name, char *buf, size_t len)
{
	_cleanup_free_ char *dir = path_join(sysfs, "class/dmi/id");
	_cleanup_free_ char *path = dir ? path_join(dir, name) : NULL;

	buf[0] = '\0';
	if (!path) {
		return -ENOMEM;
	}
	if (read_one_line(path, buf, len) < 0) {
		buf[0] = '\0';
	}
	dmi_clean(buf);
	return 0;
}

int dmi_read(const char *sysfs, struct dmi_info *ret)
{
	struct dmi_info d;
	int r;

	r = read_field(sysfs, "sys_vendor", d.vendor, sizeof(d.vendor));
	if (r < 0) {
		return r;
	}
	r = read_field(sysfs, "product_name", d.product, sizeof(d.product));
	if (r < 0) {
		return r;
	}
	*ret = d;
	return 0;
}
