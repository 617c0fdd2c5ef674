/* libFuzzer harness: the mountinfo parser and its octal unescaping. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-util.h"

#include "topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mountinfo_entry *e = NULL;
	char *text;
	size_t len;
	int n;

	text = fuzz_text(data, size, 1 << 20);
	if (!text) {
		return 0;
	}
	n = mountinfo_parse(text, &e);
	if (n > 0) {
		for (int i = 0; i < n; i++) {
			/* every string is there and NUL-terminated */
			if (!e[i].mountpoint || !e[i].root || !e[i].fstype || !e[i].source) {
				abort();
			}
			(void)strlen(e[i].mountpoint);
		}
		mountinfo_free(e, (size_t)n);
	}
	/* unescaping never grows a string */
	len = strlen(text);
	if (mountinfo_unescape(text) > len) {
		abort();
	}
	free(text);
	return 0;
}
