/* libFuzzer harness: the config loader must reject or accept any input
 * without crashing, leaking or reading out of bounds. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-util.h"

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config_errors errs = {0};
	struct config *c = NULL;
	char *text;

	text = fuzz_text(data, size, 65536);
	if (!text) {
		return 0;
	}
	if (config_load_string("fuzz.conf", text, &errs, &c) == 0) {
		char buf[512];

		config_summary(c, buf, sizeof(buf));
		config_free(c);
	}
	config_errors_clear(&errs);
	free(text);
	return 0;
}
