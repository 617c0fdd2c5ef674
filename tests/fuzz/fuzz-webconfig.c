/* libFuzzer harness: the --web.config.file parser (YAML). Certificate and
 * key paths resolve against a directory that does not exist. */
#include <stddef.h>
#include <stdint.h>

#include "webconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct web_config *wc = NULL;
	char err[512];

	if (size > 65536) {
		return 0;
	}
	if (web_config_parse((const char *)data, size, "fuzz.yml", "/nonexistent-iopsd-fuzz", &wc, err,
			     sizeof(err)) == 0) {
		size_t n;

		(void)web_config_headers(wc, &n);
		(void)web_config_requires_auth(wc);
		web_config_free(wc);
	}
	return 0;
}
