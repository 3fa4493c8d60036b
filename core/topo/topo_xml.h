/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_xml.h: NCCL's topology XML (NCCL_TOPO_FILE, NCCL_TOPO_DUMP_FILE) as a tree of elements.
 *
 * The reader takes the format NCCL writes (<system version="1">, elements cpu, pci, gpu, nvlink,
 * c2c, pcilink, nic, net) within NCCL's limits: quoted values of at most 255 bytes, at most 16
 * attributes an element (more are ignored, as NCCL does), 256 elements, comments anywhere. Unknown
 * elements are skipped with their content; text between elements, CDATA, <?...?>, <!DOCTYPE> and a
 * repeated attribute (the first counts) are skipped with an INFO. Every byte is
 * untrusted: the reader is a loop with an explicit stack (CHR_XML_MAX_DEPTH), never recursion, and
 * anything it cannot read fails with ncclInvalidUsage and "file:line: why" (chrFail), like the INI
 * loader. The tree keeps each element's line for the checks made later (topo_model.c).
 */
#ifndef CHORUS_TOPO_XML_H_
#define CHORUS_TOPO_XML_H_

#include <stdio.h>
#include "nccl.h"

#define CHR_XML_MAX_NODES 256         /* NCCL_TOPO_XML_MAX_NODES */
#define CHR_XML_MAX_ATTRS 16          /* per element; NCCL ignores the rest */
#define CHR_XML_MAX_STR 255           /* bytes of a name or a value */
#define CHR_XML_MAX_DEPTH 32          /* open elements at once; real files nest under 10 */
#define CHR_XML_MAX_FILE (1 << 20)    /* bytes; the largest real dump is a few tens of KiB */

struct chrXmlAttr {
  char* key;
  char* value;
};

struct chrXmlNode {
  char name[16];  /* one of the known element names */
  int line;       /* where it starts in the file; 0 for elements added after reading */
  int parent;     /* index, -1 for the root */
  int firstChild, lastChild, next; /* children in file order; -1 ends */
  int nAttrs;
  struct chrXmlAttr attrs[CHR_XML_MAX_ATTRS];
};

struct chrXml {
  char path[256];  /* the file, for messages ("" when built in memory) */
  int nNodes;      /* node 0 is <system> */
  struct chrXmlNode nodes[CHR_XML_MAX_NODES];
};

/* Reads and checks the syntax of `path` (a regular file of at most CHR_XML_MAX_FILE bytes). On
 * success *out is a new tree (chrXmlFree). Semantics (versions, required attributes, devices that
 * exist) are topo_model.c's job. */
ncclResult_t chrXmlLoad(const char* path, struct chrXml** out);
/* The same from memory; `name` stands for the file in messages. */
ncclResult_t chrXmlParse(const char* name, const char* text, size_t len, struct chrXml** out);
void chrXmlFree(struct chrXml* xml);

/* Writes the tree in the same format, two blanks of indent a level; reading it back gives the same
 * tree (less line numbers). */
ncclResult_t chrXmlWrite(const struct chrXml* xml, FILE* out);
ncclResult_t chrXmlWriteFile(const struct chrXml* xml, const char* path);

/* The value of an attribute, or NULL. */
const char* chrXmlAttr(const struct chrXml* xml, int node, const char* key);
/* Sets (adds or replaces) an attribute; ncclInvalidUsage when the element has no room left. */
ncclResult_t chrXmlSetAttr(struct chrXml* xml, int node, const char* key, const char* value);
/* Adds an element as the last child of `parent`; its index in *index. */
ncclResult_t chrXmlAddChild(struct chrXml* xml, int parent, const char* name, int* index);
/* Inserts an element as the first child of `parent`. */
ncclResult_t chrXmlAddFirstChild(struct chrXml* xml, int parent, const char* name, int* index);

#endif /* CHORUS_TOPO_XML_H_ */
