/* cmd_image — `g4 patches`: an image file through Gemma 4's image processor (shared/img.h). */
#ifndef G4_CMD_IMAGE_H
#define G4_CMD_IMAGE_H

/* g4 patches --image FILE [--max-soft-tokens N] --out FILE.u8
 * Writes the (N, 6912) uint8 rows to FILE.u8 and prints JSON: n, the source and resized sizes, the grid and
 * every (x, y) position. Returns 0, 1 (the image was refused: reason on stderr) or 2 (bad arguments). */
int cmd_patches(int argc, char **argv);

#endif
