/* cmd_prompt — the prompt options `g4 logits` and `g4 generate` share (--model, --ids, --prompt,
 * --messages, --image, --max-soft-tokens, --device, --image-mask, --thinking) and turning them into token
 * ids plus image patches. */
#ifndef G4_CMD_PROMPT_H
#define G4_CMD_PROMPT_H

#include <stdint.h>

#include "engine/engine.h"
#include "engine/prefill.h"
#include "model/model.h"

#define PROMPT_MAX_IMAGES 16

struct prompt_args {
    const char *model;
    const char *ids;        /* "2,105,..." */
    const char *prompt;     /* one user message */
    const char *messages;   /* a JSON file of messages */
    const char *images[PROMPT_MAX_IMAGES];
    int n_images;
    int max_soft_tokens;    /* 70, 140, 280, 560, 1120 */
    int thinking;
    enum engine_device device;
    enum engine_image_mask image_mask;
};

/* A built prompt: ids with image placeholder runs, and the images' patches in order. */
struct prompt {
    int32_t *ids;           /* (n) */
    int n;
    struct prefill_image images[PROMPT_MAX_IMAGES];
    int n_images;
    void *owned[2 * PROMPT_MAX_IMAGES];
};

void prompt_args_init(struct prompt_args *a);

/* Parses argv[i] (and its value) if it is a prompt option: returns how many arguments it used (0 if it is
 * not one), or -1 after printing a usage error for command `cmd`. */
int prompt_args_parse(struct prompt_args *a, const char *cmd, int argc, char **argv, int i);

/* Builds the prompt: ids as given, or the chat rendering of --prompt / --messages tokenized with the
 * model's tokenizer; images decoded, resized and cut into patches, their placeholder runs expanded (chat) or
 * checked (ids). 0, or -1 with err. */
int prompt_build(const struct prompt_args *a, const struct g4_model *m, struct prompt *p, char *err);
void prompt_free(struct prompt *p);

#endif
