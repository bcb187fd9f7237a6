/*
 * Parsers for the units tc writes: rates ("280mbit", "45Mbit", "1gbit",
 * "500kbit", "10MBps"), times ("30ms", "100us", "1.5s") and sizes ("32mb",
 * "4kb", "1500b"). A bare number is refused: its unit would be a guess.
 * Each returns 0, or -EINVAL with a message in err such as
 *   "280mbps" is not a rate (try "280mbit")
 */
#ifndef SHAPER_UNITS_H
#define SHAPER_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Rate in bytes per second; "unlimited" and "0bit" give 0. */
int shaper_parse_rate(const char *s, uint64_t *bytes_per_sec, char *err, size_t errlen);

/* Time in nanoseconds. */
int shaper_parse_time(const char *s, uint64_t *ns, char *err, size_t errlen);

/* Size in bytes; k/kb = 1024 as in tc. */
int shaper_parse_size(const char *s, uint64_t *bytes, char *err, size_t errlen);

/* Print a rate (bytes/s) the way tc does: "100Mbit", "6250Kbit", "1Gbit". */
void shaper_format_rate(uint64_t bytes_per_sec, char *buf, size_t len);

/* Print a time (ns) the way tc does: "5ms", "100us", "1.5ms". */
void shaper_format_time(uint64_t ns, char *buf, size_t len);

#endif
