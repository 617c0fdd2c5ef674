/* The machine's identity from SMBIOS as the kernel shows it
 * (/sys/class/dmi/id): on EC2 Nitro instances sys_vendor is "Amazon EC2"
 * and product_name the instance type ("m5.large"), which fleets join on. */
#pragma once

#define DMI_FIELD_MAX 128

struct dmi_info {
	char vendor[DMI_FIELD_MAX];  /* sys_vendor; "" when absent */
	char product[DMI_FIELD_MAX]; /* product_name: the instance type on EC2; "" when absent */
};

/* Read SYSFS/class/dmi/id/{sys_vendor,product_name} (`sysfs` is the root,
 * --path.sysfs). A missing file (no DMI: a VM without SMBIOS, an ARM board)
 * leaves its field empty. Returns 0, or -ENOMEM. */
int dmi_read(const char *sysfs, struct dmi_info *ret);

/* Pure: trim leading and trailing blanks of `s` in place and replace any
 * byte that is not printable ASCII with '?' (firmware strings are not
 * always text). */
void dmi_clean(char *s);
