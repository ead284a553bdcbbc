/* cmd_common — argument parsing helpers shared by the subcommands (see cmd.h). */
#include <errno.h>
#include <stdlib.h>

#include "cmd/cmd.h"

int cmd_parse_int(const char *name, const char *flag, const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;
    if (!s) return cmd_usage_error(name, "%s needs a value", flag);
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return cmd_usage_error(name, "%s must be an integer in [%ld, %ld], got '%s'", flag, lo, hi, s);
    *out = v;
    return 0;
}

int cmd_parse_float(const char *name, const char *flag, const char *s, double lo, double hi, double *out)
{
    return cmd_parse_float_in(name, flag, s, lo, 0, hi, 0, out);
}

int cmd_parse_float_in(const char *name, const char *flag, const char *s, double lo, int open_lo, double hi,
                       int open_hi, double *out)
{
    char *end;
    double v;
    if (!s) return cmd_usage_error(name, "%s needs a value", flag);
    errno = 0;
    v = strtod(s, &end);
    /* written as !(in range) so that NaN is refused */
    if (errno || end == s || *end || !((open_lo ? v > lo : v >= lo) && (open_hi ? v < hi : v <= hi)))
        return cmd_usage_error(name, "%s must be a number in %c%g, %g%c, got '%s'", flag, open_lo ? '(' : '[', lo,
                               hi, open_hi ? ')' : ']', s);
    *out = v;
    return 0;
}
