/* tokenizer_encode — text -> ids, with Hugging Face `tokenizers` semantics (BPE model, see tokenizer.h).
 *
 * Steps: check UTF-8; cut added tokens out of the raw text (leftmost, longest at a position); for each
 * remaining segment: normalize (Replace steps), pre-tokenize (Split, MergedWithPrevious), and BPE each word.
 * With Gemma's normalizer (" " -> "▁") a whole segment is one word: a 1 MB prompt is one 1 MB word. So BPE
 * is the linked-list + binary-heap form of tokenizers' Word::merge_all, O(n log n): every adjacent pair with
 * a merge sits in a min-heap keyed (rank, position); stale entries are recognised and skipped when popped.
 * All scratch memory belongs to the call, so a struct tok can serve many threads. Nothing here decodes. */
#include "model/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

struct bpe_sym {        /* one symbol of the word being merged */
    int32_t id;         /* token id */
    int32_t prev, next; /* neighbours in the list, -1 at the ends */
    uint32_t len;       /* bytes of text covered; 0 once merged into its left neighbour */
    uint32_t cp;        /* the character of a one-character piece; NOT_CHAR for byte and unk symbols */
};

#define NOT_CHAR UINT32_MAX

struct bpe_merge { /* a candidate merge of sym[pos] with its right neighbour */
    uint32_t rank, pos;
    int32_t id; /* the merged token */
};

struct enc { /* per-call scratch */
    const struct tok *t;
    struct tok_ids *out;
    struct bpe_sym *sym;
    size_t n_sym, sym_cap;
    struct bpe_merge *heap;
    size_t heap_n, heap_cap;
    struct tok_buf norm[2];
};

/* ========================================================================================================
 * heap of merges: smallest rank first, then smallest position
 * ====================================================================================================== */

static bool merge_before(const struct bpe_merge *a, const struct bpe_merge *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(struct enc *e, uint32_t rank, uint32_t pos, int32_t id)
{
    if (e->heap_n == e->heap_cap) {
        e->heap_cap = e->heap_cap ? e->heap_cap * 2 : 256;
        e->heap = g4_realloc(e->heap, e->heap_cap * sizeof *e->heap);
    }
    struct bpe_merge m = { rank, pos, id };
    size_t i = e->heap_n++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!merge_before(&m, &e->heap[up])) break;
        e->heap[i] = e->heap[up];
        i = up;
    }
    e->heap[i] = m;
}

static struct bpe_merge heap_pop(struct enc *e)
{
    struct bpe_merge top = e->heap[0], last = e->heap[--e->heap_n];
    size_t i = 0, n = e->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && merge_before(&e->heap[c + 1], &e->heap[c])) c++;
        if (!merge_before(&e->heap[c], &last)) break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    if (n) e->heap[i] = last;
    return top;
}

/* ========================================================================================================
 * BPE on one word
 * ====================================================================================================== */

static void sym_add(struct enc *e, int32_t id, uint32_t len, uint32_t cp)
{
    if (e->n_sym == e->sym_cap) {
        e->sym_cap = e->sym_cap ? e->sym_cap * 2 : 256;
        e->sym = g4_realloc(e->sym, e->sym_cap * sizeof *e->sym);
    }
    int32_t k = (int32_t)e->n_sym++;
    e->sym[k] = (struct bpe_sym){ id, k - 1, -1, len, cp };
    if (k > 0) e->sym[k - 1].next = k;
}

/* Queues the merge of sym[pos] with its right neighbour, if the pair has one. */
static void queue_pair(struct enc *e, int32_t pos)
{
    const struct bpe_sym *l = &e->sym[pos], *r = &e->sym[l->next];
    const struct tok_u64slot *m = u64map_get(&e->t->merges, ((uint64_t)(uint32_t)l->id << 32) | (uint32_t)r->id);
    if (m) heap_push(e, m->a, (uint32_t)pos, m->b);
}

/* The initial symbols of word w[0..n): one per character (its one-character piece), else its bytes as
 * <0xNN> tokens (byte_fallback), else unk (runs fused when fuse_unk), else nothing. This mirrors
 * tokenizers' BPE::merge_word, including its quirk that a byte-fallback character does not flush a pending
 * unk first (the unk lands after those bytes). */
static void initial_symbols(struct enc *e, const unsigned char *w, size_t n)
{
    const struct tok *t = e->t;
    bool unk = false;
    uint32_t unk_len = 0;
    e->n_sym = 0;
    for (size_t i = 0; i < n;) {
        int cl = w[i] < 0x80 ? 1 : w[i] < 0xE0 ? 2 : w[i] < 0xF0 ? 3 : 4; /* text is valid UTF-8 */
        uint32_t cp = utf8_cp(w + i, cl);
        const int32_t *page = t->cp_page[cp >> 8];
        int32_t id = page ? page[cp & 0xff] : -1;
        if (id >= 0) {
            if (unk) sym_add(e, t->unk_id, unk_len, NOT_CHAR);
            unk = false;
            sym_add(e, id, (uint32_t)cl, cp);
        } else {
            bool bytes = t->byte_fallback;
            for (int k = 0; bytes && k < cl; k++) bytes = t->byte_id[w[i + k]] >= 0;
            if (bytes) {
                for (int k = 0; k < cl; k++) sym_add(e, t->byte_id[w[i + k]], 1, NOT_CHAR);
            } else if (t->unk_id >= 0) {
                if (unk && t->fuse_unk) {
                    unk_len += (uint32_t)cl;
                } else {
                    if (unk) sym_add(e, t->unk_id, unk_len, NOT_CHAR);
                    unk = true;
                    unk_len = (uint32_t)cl;
                }
            }
        }
        i += (size_t)cl;
    }
    if (unk) sym_add(e, t->unk_id, unk_len, NOT_CHAR);
}

/* Runs the merges on the symbols [from, to) (a list cut off from its neighbours) and appends the ids. */
static void merge_range(struct enc *e, int32_t from, int32_t to)
{
    e->heap_n = 0;
    for (int32_t k = from; k + 1 < to; k++) queue_pair(e, k);
    while (e->heap_n) {
        struct bpe_merge top = heap_pop(e);
        struct bpe_sym *s = &e->sym[top.pos];
        if (s->len == 0 || s->next < 0) continue; /* merged away, or now last */
        struct bpe_sym *r = &e->sym[s->next];
        const struct tok_u64slot *m = u64map_get(&e->t->merges, ((uint64_t)(uint32_t)s->id << 32) | (uint32_t)r->id);
        if (!m || m->b != top.id) continue; /* stale: the pair at this position changed */
        s->id = top.id;
        s->len += r->len;
        s->next = r->next;
        r->len = 0;
        if (s->next >= 0) e->sym[s->next].prev = (int32_t)top.pos;
        if (s->prev >= 0) queue_pair(e, s->prev);
        if (s->next >= 0) queue_pair(e, (int32_t)top.pos);
    }
    for (int32_t k = from; k >= 0; k = e->sym[k].next) tok_ids_push(e->out, e->sym[k].id);
}

/* BPE-encodes one word and appends its ids.
 * Speed: the word is cut between two characters that no merge can ever join -- no merge's left side ends
 * with the first and right side starts with the second (t->junction) -- and the pieces are merged one by
 * one. No merge spans such a cut, so each side's merges are the ones the whole word would get, in the same
 * relative order: the ids are identical, but the heap stays small (for Gemma the cuts fall before almost
 * every "▁"). Byte-fallback and unk symbols are never cut next to. */
static void bpe_word(struct enc *e, const unsigned char *w, size_t n)
{
    const struct tok *t = e->t;
    if (n == 0) return;
    if (t->ignore_merges) {
        int32_t id = tok_vocab_get(t, (const char *)w, n);
        if (id >= 0) {
            tok_ids_push(e->out, id);
            return;
        }
    }
    initial_symbols(e, w, n);
    if (e->n_sym == 0) return;
    G4_CHECK(e->n_sym < INT32_MAX, "word of %zu symbols", e->n_sym);
    int32_t from = 0, n_sym = (int32_t)e->n_sym;
    for (int32_t k = 1; k < n_sym; k++) {
        uint32_t a = e->sym[k - 1].cp, b = e->sym[k].cp;
        if (a == NOT_CHAR || b == NOT_CHAR) continue;
        uint32_t bit = tok_junction_bit(a, b);
        if (t->junction[bit >> 6] & (1ull << (bit & 63))) continue;
        e->sym[k - 1].next = -1;
        e->sym[k].prev = -1;
        merge_range(e, from, k);
        from = k;
    }
    merge_range(e, from, n_sym);
}

/* ========================================================================================================
 * segments: normalize, pre-tokenize, BPE
 * ====================================================================================================== */

/* Next occurrence of the Split pattern in s[from..n), or n. */
static size_t find_split(const struct tok *t, const char *s, size_t from, size_t n)
{
    for (size_t i = from; i + t->split_len <= n; i++)
        if (s[i] == t->split[0] && memcmp(s + i, t->split, t->split_len) == 0) return i;
    return n;
}

/* Encodes a text segment that holds no added token. */
static void encode_segment(struct enc *e, const char *s, size_t n)
{
    const struct tok *t = e->t;
    for (int k = 0; k < t->n_norm; k++) {
        struct tok_buf *dst = &e->norm[k & 1];
        tok_replace_all(&t->norm[k], s, n, dst);
        s = dst->p;
        n = dst->n;
    }
    if (!t->split) {
        bpe_word(e, (const unsigned char *)s, n);
        return;
    }
    /* Split, MergedWithPrevious: a match joins the piece before it unless that piece is itself a match.
     * [start, ...) is the piece still open (it may grow); it is encoded once the next one starts. */
    size_t start = 0, pos = 0;
    bool open = false, prev_match = false;
    while (pos < n) {
        size_t q = find_split(t, s, pos, n);
        if (q > pos) { /* a non-matching piece [pos, q) */
            if (open) bpe_word(e, (const unsigned char *)s + start, pos - start);
            start = pos;
            open = true;
            prev_match = false;
        }
        if (q >= n) break;
        if (prev_match || !open) { /* the match [q, q + len) starts a piece of its own */
            if (open) bpe_word(e, (const unsigned char *)s + start, q - start);
            start = q;
            open = true;
        }
        pos = q + t->split_len;
        prev_match = true;
    }
    if (open) bpe_word(e, (const unsigned char *)s + start, n - start);
}

int tok_encode(const struct tok *t, const char *text, size_t len, int flags, struct tok_ids *out, char *err)
{
    size_t bad;
    if (len > TOK_MAX_TEXT_BYTES)
        return g4_errf(err, "text of %zu bytes is over the limit of %zu bytes", len, TOK_MAX_TEXT_BYTES);
    if ((bad = utf8_check((const unsigned char *)text, len)) != len)
        return g4_errf(err, "text is not valid UTF-8 at byte %zu", bad);
    if (flags & TOK_ENC_ADD_BOS) {
        int32_t bos = tok_config_id(t, "bos_token");
        if (bos < 0) return g4_errf(err, "%s: no bos_token known (tokenizer_config.json missing or without it)", t->name);
        tok_ids_push(out, bos);
    }
    if (flags & TOK_ENC_POST_PROCESS)
        for (size_t i = 0; i < t->post_pre.n; i++) tok_ids_push(out, t->post_pre.ids[i]);

    struct enc e = { .t = t, .out = out };
    const unsigned char *s = (const unsigned char *)text;
    size_t seg = 0, pos = 0;
    while (pos < len) {
        if (!t->first_byte[s[pos]]) {
            pos++;
            continue;
        }
        size_t mlen = 0;
        int32_t a = tok_added_match(t, s + pos, len - pos, &mlen);
        if (a < 0) {
            pos++;
            continue;
        }
        if (t->added[a].special && (flags & TOK_ENC_SPECIAL_AS_TEXT)) {
            pos += mlen; /* stays in the text segment, as tokenizers' matcher moves past it */
            continue;
        }
        encode_segment(&e, text + seg, pos - seg);
        tok_ids_push(out, t->added[a].id);
        pos += mlen;
        seg = pos;
    }
    encode_segment(&e, text + seg, len - seg);

    if (flags & TOK_ENC_POST_PROCESS)
        for (size_t i = 0; i < t->post_post.n; i++) tok_ids_push(out, t->post_post.ids[i]);
    free(e.sym);
    free(e.heap);
    tb_free(&e.norm[0]);
    tb_free(&e.norm[1]);
    return 0;
}
