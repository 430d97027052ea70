/* md_int.h: what the files of parity/model/ share. */
#ifndef PARITY_MD_INT_H
#define PARITY_MD_INT_H

#include <stdint.h>

float md_bf16_to_f(uint16_t b);
uint16_t md_f_to_bf16(float f);

#endif
