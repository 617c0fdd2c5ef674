/* I/Os weighted by their size in the provider's units. */
#include "provider_units.h"

double provider_units(double ios, double bytes, uint64_t unit)
{
	double units;

	if (!unit || ios <= 0) {
		return ios > 0 ? ios : 0;
	}
	units = bytes / (double)unit;
	return units > ios ? units : ios;
}

double provider_units_rw(double read_ios, double read_bytes, double write_ios, double write_bytes,
			 uint64_t unit)
{
	return provider_units(read_ios, read_bytes, unit) + provider_units(write_ios, write_bytes, unit);
}
