/* g4 — command-line entry: looks up the subcommand and hands it the rest of argv. Nothing else. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_image.h"

static const struct cmd_spec commands[] = {
    {"info", cmd_info, "--model DIR", "print a JSON summary of a checkpoint"},
    {"tokenize", cmd_tokenize, "--model DIR [--bos] [TEXT]  (stdin when TEXT is absent)", "print token ids as JSON"},
    {"detokenize", cmd_detokenize, "--model DIR [--skip-special] ID...", "print the text of token ids"},
    {"render", cmd_render,
     "--model DIR --messages FILE.json [--thinking] [--image-tokens N] [--no-generation-prompt]",
     "render a conversation in Gemma 4's chat format: prompt text and ids as JSON"},
    {"logits", cmd_logits,
     "--model DIR --ids 2,105,... [--image FILE]... [--max-soft-tokens N] [--device cpu|cuda] [--image-mask sliding|all] "
     "[--chunk N] --out FILE",
     "write float32 logits (T, V) of every prompt position"},
    {"generate", cmd_generate,
     "--model DIR (--prompt TEXT | --ids ... | --messages FILE.json) [--image FILE]... [--max-tokens N] "
     "[--temperature T] [--top-k K] [--top-p P] [--min-p M] [--seed S] [--stop STR]... [--device cpu|cuda] [--json]",
     "stream a reply (or, with --json, print its token ids)"},
    {"patches", cmd_patches, "--image FILE [--max-soft-tokens N] --out FILE.u8",
     "an image through Gemma 4's processor: (N, 6912) patch rows + JSON"},
    {"bench", cmd_bench, "--model DIR [--shape 12b|31b|wide [--layers N]] [--device cpu|cuda] [--max-prefill N] [--max-streams N] [--chunk ROWS] [--decode-only | --prefill-only]",
     "engine speed table: decode by streams and context, windows, prefill, first token, memory"},
    {"serve", cmd_serve,
     "--model DIR [--host ADDR] [--port N] [--device cpu|cuda|auto] [--api-key KEY] [--kiosk] [--max-streams N] "
     "[--max-queue N] [--context N] [--max-conns-per-addr N] [--slow-reader-ms N] [--slow-reader-bytes N] "
     "[--shutdown-grace-ms N] [--threads N] [--allow-origin ORIGIN]... [--webui DIR] [--kiosk-idle SECONDS]",
     "serve the web client, the WebSocket protocol and the OpenAI API on one port (docs/protocol.md)"},
    {"make-tiny-model", cmd_make_tiny_model, "DIR [--seed N] [--tokenizer-from TOKENIZER.json] [--shape 12b|31b|wide [--layers N]]",
     "write a small random-weight Gemma 4 unified checkpoint (or, with --shape, random weights of a real shape)"},
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
