/* safetensors — read (mmap) and write Hugging Face safetensors checkpoints.
 *
 * A file is an 8-byte little-endian header length N, N bytes of JSON (an object: tensor name ->
 * {"dtype", "shape", "data_offsets": [begin, end]} plus an optional "__metadata__" object of strings),
 * then the data buffer; offsets are relative to the buffer. A checkpoint is one file, or a directory with
 * model.safetensors, or a directory whose model.safetensors.index.json maps every tensor to its shard.
 *
 * The reader maps each file read-only and never copies tensor data: a tensor's `data` points into the
 * mapping and stays valid until st_close. Everything a file can get wrong (truncation, a lying header,
 * overlapping or out-of-range data, duplicate names, a broken index) is one clear error naming the file
 * and the tensor; nothing in a file can make the reader crash or read outside the mapping. The reader
 * knows nothing about Gemma: which tensors a model needs is config.c's business.
 *
 * The writer produces files the official safetensors library accepts (contiguous data, header padded with
 * spaces to a multiple of 8, "format" metadata); g4 uses it for the tiny demo model and the tests. */
#ifndef G4_SAFETENSORS_H
#define G4_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "util/util.h"

#define ST_MAX_DIMS 8                      /* dimensions of one tensor */
#define ST_MAX_HEADER_BYTES 100000000ull   /* JSON header size (the safetensors library's own limit) */
#define ST_MAX_INDEX_BYTES (16u << 20)     /* model.safetensors.index.json size */
#define ST_MAX_FILES 1024                  /* shards in one checkpoint */
#define ST_MAX_TENSORS 1000000             /* tensors in one checkpoint */
#define ST_MAX_NAME 1024                   /* bytes in one tensor name */

enum st_dtype {
    ST_BOOL, ST_U8, ST_I8, ST_F8_E4M3, ST_F8_E5M2, ST_U16, ST_I16, ST_F16, ST_BF16,
    ST_U32, ST_I32, ST_F32, ST_U64, ST_I64, ST_F64,
    ST_DTYPE_COUNT,
    ST_ANY_FLOAT = 100 /* for st_require only: BF16, F16 or F32 */
};

/* One tensor of an open set. Everything is owned by the set. */
struct st_tensor {
    const char *name;             /* NUL-terminated */
    enum st_dtype dtype;
    int ndim;                     /* 0..ST_MAX_DIMS (0: a scalar) */
    int64_t shape[ST_MAX_DIMS];   /* row-major, outermost first */
    int64_t numel;                /* product of shape (1 for a scalar) */
    uint64_t nbytes;              /* numel * st_dtype_size(dtype) */
    const void *data;             /* nbytes, read-only mapping; valid until st_close */
    int file;                     /* index of the file holding it (st_file_path) */
    uint64_t file_offset;         /* absolute byte offset of data within that file */
};

struct st_set; /* opaque: the open files, their mappings and the name index */

/* Opens path: a .safetensors file, or a directory holding model.safetensors.index.json (shards listed by
 * its "weight_map") or model.safetensors. Maps every file read-only and validates every header. Returns
 * NULL with err naming the file (and the tensor) on any problem. Any thread; the set is then read-only
 * and safe to share. */
struct st_set *st_open(const char *path, char *err);

/* Unmaps every file and frees the set; every st_tensor pointer from it dies. s may be NULL. */
void st_close(struct st_set *s);

/* Lookup by exact name; NULL when absent (no error). O(1). */
const struct st_tensor *st_find(const struct st_set *s, const char *name);

/* Lookup that checks what the caller expects. dt is one dtype or ST_ANY_FLOAT; shape has ndim entries,
 * a negative entry matches any size; shape may be NULL to check only ndim (ndim < 0: check nothing).
 * Returns NULL with err "FILE: tensor NAME: expected ..., found ..." (or "... is missing" naming the
 * checkpoint) when the tensor is absent or differs. */
const struct st_tensor *st_require(const struct st_set *s, const char *name, enum st_dtype dt, int ndim,
                                   const int64_t *shape, char *err);

/* Iteration over all tensors, by file then by data offset. 0 <= i < st_count(s). */
int st_count(const struct st_set *s);
const struct st_tensor *st_at(const struct st_set *s, int i);

/* Sum of nbytes over all tensors. */
uint64_t st_total_bytes(const struct st_set *s);

/* The files of the set (one unless sharded) and the path st_open was given. */
int st_file_count(const struct st_set *s);
const char *st_file_path(const struct st_set *s, int i);
const char *st_path(const struct st_set *s);

/* A "__metadata__" value (the first file that has key), or NULL. */
const char *st_metadata(const struct st_set *s, const char *key);

/* "BF16" etc.; "?" for an invalid value. */
const char *st_dtype_name(enum st_dtype dt);
/* Bytes per element (1 for BOOL and the F8 types); 0 for an invalid value. */
size_t st_dtype_size(enum st_dtype dt);
/* Parses a safetensors dtype string. 0, or -1 when unknown. */
int st_dtype_from_name(const char *s, enum st_dtype *out);

/* Writes "[262144, 3840]" into buf (cap bytes, always terminated); returns buf. */
char *st_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap);

/* ---- writer (safetensors_write.c) ---------------------------------------------------------------- */

struct st_write_tensor {
    const char *name;
    enum st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const void *data;             /* numel * st_dtype_size(dtype) bytes */
};

/* Writes a safetensors file at path (through path.tmp, renamed when complete). Tensors are laid out
 * contiguously, stable-sorted by element size, largest first (so every tensor is aligned to its element
 * size, as the safetensors library arranges it), and otherwise in the given order; the header lists them in
 * that order and is padded with spaces to a multiple of 8 bytes. metadata is NULL or an object of strings;
 * "format": "pt" is added when it has no "format" (transformers refuses archives without one). Returns 0,
 * or -1 with err (bad names, duplicates, bad shapes, I/O). */
int st_write(const char *path, const struct st_write_tensor *t, int n, const cJSON *metadata, char *err);

#endif
