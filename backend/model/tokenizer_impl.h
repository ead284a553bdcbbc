/* tokenizer_impl — the tokenizer room's private structures and helpers, shared by tokenizer_*.c only.
 *
 * struct tok holds the BPE vocabulary (pieces in one arena, a string->id hash), the merge table (a hash
 * from the pair (left id, right id) to (rank, merged id)), the added tokens (a byte trie for leftmost-longest
 * matching) and the normalizer / pre-tokenizer / decoder / post-processor steps the loader accepted.
 * Also here: a growable byte buffer, a u64-keyed hash map, UTF-8 checks and a small JSON scanner that reads
 * the two huge arrays of tokenizer.json (vocab, merges) without building a cJSON tree for them.
 * Nothing outside backend/model/tokenizer_*.c may include this file. */
#ifndef G4_TOKENIZER_IMPL_H
#define G4_TOKENIZER_IMPL_H

#include "model/tokenizer.h"
#include "util/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- byte buffer -------------------------------------------------------------------------------------- */

/* p[0..n) is the content; p[n] is kept '\0' once anything was put, so p can be used as a C string. */
struct tok_buf {
    char *p;
    size_t n, cap;
};
void tb_reserve(struct tok_buf *b, size_t extra);
void tb_put(struct tok_buf *b, const void *s, size_t n);
void tb_putc(struct tok_buf *b, char c);
void tb_free(struct tok_buf *b);

struct tok_replace;
/* dst = src[0..n) with every non-overlapping occurrence (left to right) of r->pat replaced by r->rep. */
void tok_replace_all(const struct tok_replace *r, const char *src, size_t n, struct tok_buf *dst);

/* Memory for a large hash table: from 2 MiB up, its own mapping advised to use huge pages (with 4 KiB
 * pages, TLB and page-fault costs dominated loading on the build VM). Free with the same size. */
void *tok_table_alloc(size_t bytes);
void tok_table_free(void *p, size_t bytes);

/* Maps a whole file read-only, pages populated up front (on the build VM a page fault costs tens of
 * microseconds: reading 33 MB into a fresh malloc buffer took ~0.35 s, mapping it ~0.04 s). At most
 * TOK_MAX_FILE_BYTES. NULL with err; *len gets the size. Release with tok_unmap_file(p, *len). */
const char *tok_map_file(const char *path, size_t *len, char *err);
void tok_unmap_file(const char *p, size_t len);

/* --- hashing and the u64 map -------------------------------------------------------------------------- */

uint32_t tok_hash(const void *s, size_t n); /* FNV-1a, 32 bit */

struct tok_u64slot {
    uint64_t key; /* UINT64_MAX = empty */
    uint32_t a;   /* merges: rank; trie: child node */
    int32_t b;    /* merges: merged id */
};
struct tok_u64map {
    struct tok_u64slot *slots; /* (mask + 1), open addressing, linear probing */
    uint32_t mask, n;
};
void u64map_init(struct tok_u64map *m, size_t expected);
void u64map_free(struct tok_u64map *m);
const struct tok_u64slot *u64map_get(const struct tok_u64map *m, uint64_t key);
/* The slot for key, inserted (a = 0, b = 0) when absent; *fresh says which. Grows past 1/2 load. */
struct tok_u64slot *u64map_put(struct tok_u64map *m, uint64_t key, bool *fresh);

/* --- UTF-8 -------------------------------------------------------------------------------------------- */

/* Length of the first valid UTF-8 sequence at s[0..n) (1..4), or 0 if the bytes there are not one
 * (bad lead, bad continuation, overlong, surrogate, > U+10FFFF, or cut short by n). */
int utf8_valid_len(const unsigned char *s, size_t n);

/* Offset of the first invalid byte of s[0..n), or n when all of it is valid UTF-8. */
size_t utf8_check(const unsigned char *s, size_t n);

/* The code point of a valid sequence of len bytes. */
uint32_t utf8_cp(const unsigned char *s, int len);

/* Writes cp (<= U+10FFFF) as UTF-8 into out; returns the byte count. */
int utf8_put(uint32_t cp, char out[4]);

/* --- JSON scanner ------------------------------------------------------------------------------------- */

/* A cursor over a JSON text already checked to be valid UTF-8. Failures write
 * "NAME: bad JSON at byte N: WHAT" into err and return -1. */
struct tj {
    const char *base, *p, *end;
    const char *name; /* file name for messages */
    char *err;
};
struct tj_span {
    const char *p; /* start of the value's text (NULL when the member was absent) */
    size_t n;
};

int tj_fail(struct tj *j, const char *what);
void tj_ws(struct tj *j);
int tj_string(struct tj *j, struct tok_buf *out); /* out is reset, then gets the decoded string */
int tj_int(struct tj *j, int64_t *v);             /* a JSON number that is an integer */
int tj_skip(struct tj *j, int depth);             /* any value, validated, nesting depth-limited */
int tj_skip_span(struct tj *j, struct tj_span *span); /* tj_skip recording the value's text */
/* Iterate an object or array: tj_open consumes '{' / '['; tj_next returns 1 when an element follows (for
 * an object the key is read into key and ':' consumed), 0 after the closing bracket, -1 on error. */
int tj_open(struct tj *j, char open);
int tj_next(struct tj *j, char close, int *count, struct tok_buf *key);

/* --- the tokenizer ------------------------------------------------------------------------------------ */

struct tok_replace { /* a Replace step with a string pattern */
    char *pat, *rep;
    size_t pat_len, rep_len;
};

struct tok_added {
    int32_t id;
    uint32_t off, len; /* content in t->arena */
    bool special;
};

#define TOK_NO_PIECE UINT32_MAX
#define TOK_JUNCTION_BITS (1u << 21) /* 256 KiB; a false positive only means a missed cut (see encode) */
#define TOK_CP_PAGES 0x1100 /* (U+10FFFF + 1) / 256 */

struct tok {
    char *name;      /* file name, for messages */
    int32_t n_ids;   /* one past the largest id (vocab or added) */

    /* strings: vocabulary pieces and added-token contents, each NUL-terminated */
    char *arena;
    size_t arena_len, arena_cap;
    uint32_t *piece_off, *piece_len; /* (n_ids) the BPE vocabulary piece of each id, TOK_NO_PIECE = none */

    /* BPE vocabulary string -> id: open addressing, linear probing */
    struct tok_vslot {
        uint32_t hash;     /* tok_hash of the piece */
        int32_t id;        /* -1 = empty */
        uint32_t off, len; /* the piece in arena (a copy of piece_off/len: one cache miss less) */
    } *vslot;              /* (vmask + 1) */
    uint32_t vmask;

    struct tok_u64map merges;         /* (left << 32 | right) -> a = rank, b = merged id */
    uint64_t *junction;               /* (TOK_JUNCTION_BITS / 64) bit set of (last char of left, first char of
                                         right) over all merges: where a merge can ever join two characters */
    int32_t byte_id[256];             /* id of "<0xNN>", -1 when absent */
    int32_t *cp_page[TOK_CP_PAGES];   /* code point -> id of its one-character piece; pages of 256, NULL */
    int32_t unk_id;                   /* -1 when model.unk_token is null */
    bool byte_fallback, fuse_unk, ignore_merges;

    /* added tokens, matched on the raw text */
    struct tok_added *added; /* (n_added) */
    int32_t n_added;
    int32_t *added_of; /* (n_ids) index into added, -1 */
    struct tok_u64map trie; /* (node << 8 | byte) -> a = child node; node 0 is the root */
    int32_t *trie_term;     /* (trie_nodes) index into added of the token ending at the node, -1 */
    uint32_t trie_nodes, trie_cap;
    bool first_byte[256];   /* some added token starts with this byte */

    /* pipeline */
    struct tok_replace *norm; /* normalizer: Replace steps in order */
    int n_norm;
    char *split;              /* pre_tokenizer Split pattern (MergedWithPrevious), NULL = none */
    size_t split_len;
    struct tok_replace *dec_rep; /* decoder: Replace steps applied to each piece */
    int n_dec_rep;
    bool dec_byte_fallback;      /* decoder has ByteFallback */
    struct tok_ids post_pre, post_post; /* post_processor single template: ids before / after $A */

    /* tokenizer_config.json: fields whose value names a token */
    struct tok_cfg {
        char *field, *value;
    } *cfg;
    int n_cfg;
};

/* The string of id as decode sees it (added content, else vocabulary piece); NULL if none. */
const char *tok_piece_len(const struct tok *t, int32_t id, size_t *len);

/* The junction bit of the character pair (a, b). */
static inline uint32_t tok_junction_bit(uint32_t a, uint32_t b)
{
    uint64_t h = ((uint64_t)a << 32 | b) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 43); /* 21 bits */
}

/* BPE vocabulary lookup of s[0..n): id or -1. */
int32_t tok_vocab_get(const struct tok *t, const char *s, size_t n);

/* Longest added token that s[0..n) starts with: its index into t->added and *len, or -1. */
int32_t tok_added_match(const struct tok *t, const unsigned char *s, size_t n, size_t *len);

/* tokenizer_steps.c: the normalizer / pre_tokenizer / decoder / post_processor members (each may be NULL
 * for absent), and tokenizer_config.json. 0, or -1 with err naming the unsupported field. */
struct cJSON;
int tok_read_steps(struct tok *t, const struct cJSON *norm, const struct cJSON *pre, const struct cJSON *dec,
                   const struct cJSON *post, char *err);
int tok_read_config(struct tok *t, const char *json, size_t len, char *err);

#endif
