/* cmd — the g4 subcommands. Each takes the arguments after its name and returns the process exit code
 * (0 ok, 1 the work failed with a printed reason, 2 bad arguments with usage printed). main.c only
 * dispatches; the work happens in the rooms these functions call. */
#ifndef G4_CMD_H
#define G4_CMD_H

struct cmd_spec {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *usage;   /* one line: arguments after the name */
    const char *summary; /* one line: what it does */
};

int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_make_tiny_model(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* Prints "g4 NAME: REASON" and the command's usage to stderr; returns 2. */
int cmd_usage_error(const char *name, const char *fmt, ...);

/* Small argument helpers shared by the commands: `--flag VALUE` parsing with checks. */
int cmd_parse_int(const char *name, const char *flag, const char *s, long lo, long hi, long *out);
int cmd_parse_float(const char *name, const char *flag, const char *s, double lo, double hi, double *out);
/* The same with either end open (open_lo: lo itself refused; open_hi: hi itself refused). */
int cmd_parse_float_in(const char *name, const char *flag, const char *s, double lo, int open_lo, double hi,
                       int open_hi, double *out);

#endif
