/* The derived limits of every [device] section, for --check-config. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "check_limits.h"
#include "volume_size.h"

/* "1000 GiB", or "size unknown here". */
static const char *size_str(int r, uint64_t bytes, char *buf, size_t len)
{
	if (r < 0) {
		snprintf(buf, len, "size unknown here");
	} else {
		snprintf(buf, len, "%.1f GiB", (double)bytes / (double)(1ULL << 30));
	}
	return buf;
}

static int check_one(const struct device_config *dc, const char *sysfs, FILE *out)
{
	struct device_declared d = device_config_declared(dc);
	char notices[DEVICE_LIMITS_NOTICES_MAX][DEVICE_LIMITS_NOTICE_LEN], line[512], sz[48];
	struct device_limits l;
	uint64_t bytes = 0;
	size_t n = 0;
	const char *why = NULL;
	int r = volume_size_bytes(sysfs, dc->name, &bytes);

	if (dc->provider.volume_type < 0) {
		device_limits_resolve(&d, bytes, &l, notices, &n, &why);
		device_limits_describe(&l, line, sizeof(line));
		fprintf(out, "[device %s]: %s\n", dc->name, line);
		return 0;
	}
	size_str(r, bytes, sz, sizeof(sz));
	if (device_limits_resolve(&d, r < 0 ? 0 : bytes, &l, notices, &n, &why) < 0) {
		fprintf(out, "[device %s]: volume_type=%s (%s): %s\n", dc->name,
			volume_type_to_string((enum volume_type)dc->provider.volume_type), sz, why);
		return r < 0 ? 0 : -EINVAL;
	}
	device_limits_describe(&l, line, sizeof(line));
	fprintf(out, "[device %s]: volume_type=%s (%s): %s\n", dc->name,
		volume_type_to_string((enum volume_type)dc->provider.volume_type), sz, line);
	/* what overrides the preset: the notices of loading said so */
	return 0;
}

int daemon_check_device_limits(const struct config *cfg, const char *sysfs, FILE *out)
{
	int ret = 0;

	for (size_t i = 0; i < cfg->n_devices; i++) {
		if (check_one(&cfg->devices[i], sysfs, out) < 0) {
			ret = -EINVAL;
		}
	}
	return ret;
}
