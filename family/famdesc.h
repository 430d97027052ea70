/* famdesc.h: what the harness needs to know about each kernel family
 * beyond its registry entry, as data in one place (famdesc.c): the
 * dimension that indexes independent rows (the batch) and the shapes of
 * the campaign's presets.  The family's tensors are refimpl's
 * (ref_inputs), its params' defaults the registry's; adding a family adds
 * one row here. */
#ifndef PARITY_FAMDESC_H
#define PARITY_FAMDESC_H

/* The dimension that indexes independent rows of a family ("M", "B",
 * "T"), or NULL for a family this table does not know. */
const char *fam_batch_dim(const char *family);

/* The shape of family in preset ("small", "8b-layer"): "M=4,N=24,K=200";
 * NULL when the preset or the family is unknown. */
const char *fam_preset_shape(const char *preset, const char *family);
/* 1 when some family has a shape in preset. */
int fam_preset_known(const char *preset);

#endif
