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
    char *end;
    double v;
    if (!s) return cmd_usage_error(name, "%s needs a value", flag);
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return cmd_usage_error(name, "%s must be a number in [%g, %g], got '%s'", flag, lo, hi, s);
    *out = v;
    return 0;
}
