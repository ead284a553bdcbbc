// knobs — run-time switches that launchers in several files read, kept in one place so that a test can flip
// one for the whole process. Each switch changes speed only, never a bit (the tests assert it).
#include <stdlib.h>

#include "kernels.h"

// G4_CUDA_EARLY_LOADS=1 (kernels.h): read once, then kern_set_early_loads overrides it.
static int early_loads = -1;

extern "C" int kern_early_loads(void)
{
    if (early_loads < 0) {
        const char *v = getenv("G4_CUDA_EARLY_LOADS");
        early_loads = v && v[0] == '1';
    }
    return early_loads;
}

extern "C" void kern_set_early_loads(int on) { early_loads = on != 0; }
