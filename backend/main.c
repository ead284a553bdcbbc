/* g4 — command-line entry: looks up the subcommand and hands it the rest of argv. Nothing else. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_image.h"

static const struct cmd_spec commands[] = {
    {"help", NULL, "", "this list"},
    {"patches", cmd_patches, "--image FILE [--max-soft-tokens N] --out FILE.u8", "an image through Gemma 4's processor: (N, 6912) patch rows + JSON"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void print_usage(FILE *f)
{
    fprintf(f, "usage: g4 COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-16s %s\n  %-16s   %s\n", commands[i].name, commands[i].summary, "", commands[i].usage);
}

int cmd_usage_error(const char *name, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "g4 %s: ", name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(commands[i].name, name)) fprintf(stderr, "usage: g4 %s %s\n", name, commands[i].usage);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        print_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (commands[i].fn && !strcmp(commands[i].name, argv[1])) return commands[i].fn(argc - 2, argv + 2);
    fprintf(stderr, "g4: unknown command '%s'\n", argv[1]);
    print_usage(stderr);
    return 2;
}
