/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_xml.c: reading and writing NCCL's topology XML (topo_xml.h).
 *
 * The reader is one loop over the text with a stack of open elements; it counts lines as it goes, so
 * every error names the line where the offending construct starts. What it reads is the subset of
 * XML NCCL writes and reads: elements with quoted attributes and comments. What a file NCCL accepts
 * may hold besides, and this format gives no meaning to, is skipped with an INFO: text between
 * elements, CDATA, <?...?> (the <?xml?> line quietly), <!DOCTYPE ...>, a second attribute of one name
 * (the first counts, as NCCL's lookup takes the first). Entities are not expanded: values are kept
 * byte for byte, as NCCL keeps them.
 * The nesting is checked here (NCCL's: system > cpu > {pci, nic}; pci > {pci, gpu, nic, pcilink};
 * gpu > {nvlink, c2c}; nic > net), because a misplaced element is a syntax fact of this format.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/check.h"
#include "log/log.h"
#include "topo/topo_xml.h"

/* The known elements and where each may stand. */
static const struct {
  const char* name;
  const char* parents; /* space-separated; "" for the root */
} kElements[] = {
    {"system", ""},       {"cpu", "system"}, {"pci", "cpu pci"}, {"gpu", "pci"},  {"nvlink", "gpu"},
    {"c2c", "gpu"},       {"pcilink", "pci"}, {"nic", "cpu pci"}, {"net", "nic"},
};

static int elementKind(const char* name) {
  for (size_t i = 0; i < sizeof(kElements) / sizeof(kElements[0]); i++)
    if (strcmp(kElements[i].name, name) == 0) return (int)i;
  return -1;
}

static int allowedUnder(int kind, const char* parent) {
  const char* p = kElements[kind].parents;
  size_t n = strlen(parent);
  while (*p) {
    size_t w = strcspn(p, " ");
    if (w == n && strncmp(p, parent, n) == 0) return 1;
    p += w;
    while (*p == ' ') p++;
  }
  return 0;
}

struct reader {
  const char* name;
  const char* p;
  const char* end;
  int line;
};

static ncclResult_t failAt(const struct reader* rd, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ncclResult_t failAt(const struct reader* rd, int line, const char* fmt, ...) {
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  return chrFail(ncclInvalidUsage, "%s:%d: %s", rd->name, line, why);
}

static void advance(struct reader* rd, size_t n) {
  for (size_t i = 0; i < n && rd->p < rd->end; i++, rd->p++)
    if (*rd->p == '\n') rd->line++;
}

static void skipSpace(struct reader* rd) {
  while (rd->p < rd->end && (*rd->p == ' ' || *rd->p == '\t' || *rd->p == '\r' || *rd->p == '\n')) advance(rd, 1);
}

static int startsWith(const struct reader* rd, const char* s) {
  size_t n = strlen(s);
  return (size_t)(rd->end - rd->p) >= n && memcmp(rd->p, s, n) == 0;
}

/* Moves past `terminator`; 0 when the text ends first. */
static int skipPast(struct reader* rd, const char* terminator) {
  while (rd->p < rd->end) {
    if (startsWith(rd, terminator)) {
      advance(rd, strlen(terminator));
      return 1;
    }
    advance(rd, 1);
  }
  return 0;
}

static int nameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int nameChar(char c) { return nameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == ':'; }

static ncclResult_t readName(struct reader* rd, const char* what, char* out) {
  if (rd->p >= rd->end || !nameStart(*rd->p)) return failAt(rd, rd->line, "expected %s", what);
  size_t n = 0;
  while (rd->p < rd->end && nameChar(*rd->p)) {
    if (n == CHR_XML_MAX_STR) return failAt(rd, rd->line, "%s longer than %d bytes", what, CHR_XML_MAX_STR);
    out[n++] = *rd->p;
    advance(rd, 1);
  }
  out[n] = '\0';
  return ncclSuccess;
}

static ncclResult_t readValue(struct reader* rd, const char* key, char* out) {
  if (rd->p >= rd->end || (*rd->p != '"' && *rd->p != '\''))
    return failAt(rd, rd->line, "the value of %s must be quoted", key);
  char quote = *rd->p;
  int line = rd->line;
  advance(rd, 1);
  size_t n = 0;
  while (rd->p < rd->end && *rd->p != quote) {
    if (*rd->p == '<') return failAt(rd, line, "the value of %s is not terminated before the next '<'", key);
    if (n == CHR_XML_MAX_STR) return failAt(rd, line, "the value of %s is longer than %d bytes", key, CHR_XML_MAX_STR);
    out[n++] = *rd->p;
    advance(rd, 1);
  }
  if (rd->p >= rd->end) return failAt(rd, line, "the quoted value of %s is not terminated", key);
  advance(rd, 1);
  out[n] = '\0';
  return ncclSuccess;
}

static ncclResult_t newNode(struct reader* rd, struct chrXml* xml, int parent, const char* name, int line, int* index) {
  if (xml->nNodes == CHR_XML_MAX_NODES)
    return failAt(rd, line, "more than %d elements (NCCL's limit)", CHR_XML_MAX_NODES);
  int i = xml->nNodes++;
  struct chrXmlNode* n = &xml->nodes[i];
  memset(n, 0, sizeof(*n));
  snprintf(n->name, sizeof(n->name), "%s", name);
  n->line = line;
  n->parent = parent;
  n->firstChild = n->lastChild = n->next = -1;
  if (parent >= 0) {
    struct chrXmlNode* p = &xml->nodes[parent];
    if (p->lastChild >= 0) xml->nodes[p->lastChild].next = i;
    else p->firstChild = i;
    p->lastChild = i;
  }
  *index = i;
  return ncclSuccess;
}

static char* dupString(const char* s) {
  char* d = strdup(s);
  if (!d) abort(); /* a few bytes: out of memory here is not recoverable */
  return d;
}

/* One start tag, after its '<'. Pushes it when it stays open. */
struct openTag {
  int node; /* index, or -1 when skipped (unknown, or inside an unknown element) */
  int line;
  char name[CHR_XML_MAX_STR + 1];
};

static ncclResult_t readStartTag(struct reader* rd, struct chrXml* xml, struct openTag* stack, int* depth,
                                 int* rootDone) {
  int line = rd->line;
  struct openTag tag = {.node = -1, .line = line};
  ncclResult_t nameRes = readName(rd, "an element name after '<'", tag.name);
  if (nameRes != ncclSuccess) return nameRes;
  if (*rootDone) return failAt(rd, line, "<%s> after the closing </system>", tag.name);
  int kind = elementKind(tag.name);
  if (*depth == 0) {
    if (strcmp(tag.name, "graphs") == 0)
      return failAt(rd, line, "<graphs> is an NCCL_GRAPH_FILE, not a topology (expected <system>)");
    if (kind != 0) return failAt(rd, line, "the document element is <%s>; expected <system>", tag.name);
  }
  int parentNode = *depth > 0 ? stack[*depth - 1].node : -1;
  int skipped = *depth > 0 && parentNode < 0;
  if (!skipped && *depth > 0) {
    const char* parentName = xml->nodes[parentNode].name;
    if (kind < 0) {
      INFO(NCCL_GRAPH, "%s:%d: skipping unknown element <%s>", rd->name, line, tag.name);
      skipped = 1;
    } else if (kind == 0 || !allowedUnder(kind, parentName)) {
      return failAt(rd, line, "<%s> inside <%s>; a %s belongs in: %s", tag.name, parentName, tag.name,
                    kElements[kind].parents[0] ? kElements[kind].parents : "nothing (it is the document element)");
    }
  }
  if (!skipped) {
    ncclResult_t res = newNode(rd, xml, parentNode, tag.name, line, &tag.node);
    if (res != ncclSuccess) return res;
  }
  int ignored = 0;
  for (;;) {
    skipSpace(rd);
    if (rd->p >= rd->end) return failAt(rd, line, "<%s> is not terminated by '>'", tag.name);
    if (startsWith(rd, "/>") || *rd->p == '>') break;
    char key[CHR_XML_MAX_STR + 1], value[CHR_XML_MAX_STR + 1];
    ncclResult_t res = readName(rd, "an attribute name, '>' or '/>'", key);
    if (res != ncclSuccess) return res;
    skipSpace(rd);
    if (rd->p >= rd->end || *rd->p != '=') return failAt(rd, rd->line, "expected '=' after %s", key);
    advance(rd, 1);
    skipSpace(rd);
    res = readValue(rd, key, value);
    if (res != ncclSuccess) return res;
    if (tag.node < 0) continue;
    if (chrXmlAttr(xml, tag.node, key)) {
      /* NCCL keeps both and its lookup finds the first: the same outcome. */
      INFO(NCCL_GRAPH, "%s:%d: <%s> has a second %s attribute; ignored, the first counts (as in NCCL)", rd->name,
           rd->line, tag.name, key);
      continue;
    }
    struct chrXmlNode* n = &xml->nodes[tag.node];
    if (n->nAttrs == CHR_XML_MAX_ATTRS) {
      ignored++;
      continue;
    }
    n->attrs[n->nAttrs].key = dupString(key);
    n->attrs[n->nAttrs].value = dupString(value);
    n->nAttrs++;
  }
  if (ignored)
    INFO(NCCL_GRAPH, "%s:%d: <%s> has more than %d attributes; %d ignored, as NCCL does", rd->name, line, tag.name,
         CHR_XML_MAX_ATTRS, ignored);
  int selfClosing = startsWith(rd, "/>");
  advance(rd, selfClosing ? 2 : 1);
  if (selfClosing) {
    if (*depth == 0) *rootDone = 1;
    return ncclSuccess;
  }
  if (*depth == CHR_XML_MAX_DEPTH)
    return failAt(rd, line, "elements nested more than %d deep", CHR_XML_MAX_DEPTH);
  stack[(*depth)++] = tag;
  return ncclSuccess;
}

static ncclResult_t readEndTag(struct reader* rd, struct openTag* stack, int* depth, int* rootDone) {
  int line = rd->line;
  char name[CHR_XML_MAX_STR + 1];
  ncclResult_t res = readName(rd, "an element name after '</'", name);
  if (res != ncclSuccess) return res;
  skipSpace(rd);
  if (rd->p >= rd->end || *rd->p != '>') return failAt(rd, line, "</%s is not terminated by '>'", name);
  advance(rd, 1);
  if (*depth == 0) return failAt(rd, line, "</%s> closes nothing", name);
  struct openTag* top = &stack[*depth - 1];
  if (strcmp(top->name, name) != 0)
    return failAt(rd, line, "</%s> where </%s> was expected (opened at line %d)", name, top->name, top->line);
  if (--*depth == 0) *rootDone = 1;
  return ncclSuccess;
}

/* A <!DOCTYPE ...> or other declaration, from its "<!": up to the '>' that closes it, past quoted
 * strings and an internal subset in [...] (whose own declarations end in '>' too). */
static ncclResult_t skipDeclaration(struct reader* rd) {
  int line = rd->line, bracket = 0;
  char quote = 0;
  advance(rd, 2);
  while (rd->p < rd->end) {
    char c = *rd->p;
    advance(rd, 1);
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[') {
      bracket++;
    } else if (c == ']' && bracket > 0) {
      bracket--;
    } else if (c == '>' && bracket == 0) {
      return ncclSuccess;
    }
  }
  return failAt(rd, line, "'<!' declaration not terminated by '>'");
}

static ncclResult_t parseText(struct reader* rd, struct chrXml* xml) {
  struct openTag* stack = malloc(sizeof(*stack) * CHR_XML_MAX_DEPTH);
  if (!stack) return chrFail(ncclSystemError, "topology: out of memory");
  int depth = 0, rootDone = 0, sawElement = 0, textNoted = 0;
  ncclResult_t res = ncclSuccess;
  while (res == ncclSuccess) {
    skipSpace(rd);
    if (rd->p >= rd->end) break;
    int line = rd->line;
    if (*rd->p != '<') {
      /* Character data: this format has none, so it means nothing; skipped, noted once a file. */
      if (!textNoted++) INFO(NCCL_GRAPH, "%s:%d: text between elements ignored", rd->name, line);
      while (rd->p < rd->end && *rd->p != '<') advance(rd, 1);
    } else if (startsWith(rd, "<!--")) {
      if (!skipPast(rd, "-->")) res = failAt(rd, line, "comment not terminated by '-->'");
    } else if (startsWith(rd, "<?")) {
      /* The <?xml ...?> declaration, or any processing instruction: nothing this format uses. */
      int declaration = !sawElement && startsWith(rd, "<?xml") && rd->end - rd->p > 5 &&
                        (rd->p[5] == ' ' || rd->p[5] == '\t' || rd->p[5] == '\r' || rd->p[5] == '\n');
      if (!skipPast(rd, "?>")) res = failAt(rd, line, "'<?' not terminated by '?>'");
      else if (!declaration) INFO(NCCL_GRAPH, "%s:%d: processing instruction '<?...?>' ignored", rd->name, line);
    } else if (startsWith(rd, "<![CDATA[")) {
      if (!skipPast(rd, "]]>")) res = failAt(rd, line, "CDATA section not terminated by ']]>'");
      else if (!textNoted++) INFO(NCCL_GRAPH, "%s:%d: CDATA section ignored", rd->name, line);
    } else if (startsWith(rd, "<!")) {
      res = skipDeclaration(rd);
      if (res == ncclSuccess) INFO(NCCL_GRAPH, "%s:%d: declaration '<!...>' (DOCTYPE) ignored", rd->name, line);
    } else if (startsWith(rd, "</")) {
      advance(rd, 2);
      res = readEndTag(rd, stack, &depth, &rootDone);
    } else {
      advance(rd, 1);
      sawElement = 1;
      res = readStartTag(rd, xml, stack, &depth, &rootDone);
    }
  }
  if (res == ncclSuccess && depth > 0)
    res = failAt(rd, rd->line, "the text ends inside <%s> (opened at line %d)", stack[depth - 1].name,
                 stack[depth - 1].line);
  if (res == ncclSuccess && xml->nNodes == 0) res = failAt(rd, rd->line, "no <system> element");
  free(stack);
  return res;
}

ncclResult_t chrXmlParse(const char* name, const char* text, size_t len, struct chrXml** out) {
  struct reader rd = {.name = name, .p = text, .end = text + len, .line = 1};
  const char* nul = memchr(text, '\0', len);
  if (nul) {
    for (const char* c = text; c < nul; c++) rd.line += *c == '\n';
    return failAt(&rd, rd.line, "a NUL byte: not a text file");
  }
  struct chrXml* xml = calloc(1, sizeof(*xml));
  if (!xml) return chrFail(ncclSystemError, "topology: out of memory");
  snprintf(xml->path, sizeof(xml->path), "%s", name);
  ncclResult_t res = parseText(&rd, xml);
  if (res != ncclSuccess) {
    chrXmlFree(xml);
    return res;
  }
  *out = xml;
  return ncclSuccess;
}

ncclResult_t chrXmlLoad(const char* path, struct chrXml** out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* O_NONBLOCK: a FIFO must not hang us */
  if (fd < 0) return chrFail(ncclInvalidUsage, "%s: cannot open the topology file: %s", path, strerror(errno));
  struct stat st;
  ncclResult_t res = ncclSuccess;
  char* text = NULL;
  if (fstat(fd, &st) != 0) {
    res = chrFail(ncclInvalidUsage, "%s: cannot stat the topology file: %s", path, strerror(errno));
    goto done;
  }
  if (!S_ISREG(st.st_mode)) {
    res = chrFail(ncclInvalidUsage, "%s: not a regular file (a topology file must be one)", path);
    goto done;
  }
  if (st.st_size > CHR_XML_MAX_FILE) {
    res = chrFail(ncclInvalidUsage, "%s: %lld bytes; a topology file is at most %d bytes", path,
                  (long long)st.st_size, CHR_XML_MAX_FILE);
    goto done;
  }
  text = malloc((size_t)st.st_size + 1);
  if (!text) {
    res = chrFail(ncclSystemError, "%s: out of memory", path);
    goto done;
  }
  size_t len = 0;
  while (len < (size_t)st.st_size) {
    ssize_t n = read(fd, text + len, (size_t)st.st_size - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      res = chrFail(ncclInvalidUsage, "%s: cannot read the topology file: %s", path, strerror(errno));
      goto done;
    }
    if (n == 0) break; /* shrank while we read: parse what there is */
    len += (size_t)n;
  }
  res = chrXmlParse(path, text, len, out);
done:
  free(text);
  close(fd);
  return res;
}

void chrXmlFree(struct chrXml* xml) {
  if (!xml) return;
  for (int i = 0; i < xml->nNodes; i++)
    for (int a = 0; a < xml->nodes[i].nAttrs; a++) {
      free(xml->nodes[i].attrs[a].key);
      free(xml->nodes[i].attrs[a].value);
    }
  free(xml);
}

const char* chrXmlAttr(const struct chrXml* xml, int node, const char* key) {
  const struct chrXmlNode* n = &xml->nodes[node];
  for (int a = 0; a < n->nAttrs; a++)
    if (strcmp(n->attrs[a].key, key) == 0) return n->attrs[a].value;
  return NULL;
}

ncclResult_t chrXmlSetAttr(struct chrXml* xml, int node, const char* key, const char* value) {
  struct chrXmlNode* n = &xml->nodes[node];
  for (int a = 0; a < n->nAttrs; a++)
    if (strcmp(n->attrs[a].key, key) == 0) {
      free(n->attrs[a].value);
      n->attrs[a].value = dupString(value);
      return ncclSuccess;
    }
  if (n->nAttrs == CHR_XML_MAX_ATTRS)
    return chrFail(ncclInvalidUsage, "%s:%d: <%s> has no room for attribute %s (%d at most)", xml->path, n->line,
                   n->name, key, CHR_XML_MAX_ATTRS);
  n->attrs[n->nAttrs].key = dupString(key);
  n->attrs[n->nAttrs].value = dupString(value);
  n->nAttrs++;
  return ncclSuccess;
}

ncclResult_t chrXmlAddChild(struct chrXml* xml, int parent, const char* name, int* index) {
  struct reader rd = {.name = xml->path};
  return newNode(&rd, xml, parent, name, 0, index);
}

ncclResult_t chrXmlAddFirstChild(struct chrXml* xml, int parent, const char* name, int* index) {
  int oldFirst = xml->nodes[parent].firstChild;
  CHECK(chrXmlAddChild(xml, parent, name, index));
  if (oldFirst < 0) return ncclSuccess;
  /* newNode appended it: unlink it from the end and put it first. */
  struct chrXmlNode* p = &xml->nodes[parent];
  int prev = oldFirst;
  while (xml->nodes[prev].next != *index) prev = xml->nodes[prev].next;
  xml->nodes[prev].next = -1;
  p->lastChild = prev;
  xml->nodes[*index].next = oldFirst;
  p->firstChild = *index;
  return ncclSuccess;
}

static void writeOpen(const struct chrXml* xml, int i, int level, FILE* out) {
  const struct chrXmlNode* n = &xml->nodes[i];
  fprintf(out, "%*s<%s", 2 * level, "", n->name);
  for (int a = 0; a < n->nAttrs; a++) {
    char q = strchr(n->attrs[a].value, '"') ? '\'' : '"';
    fprintf(out, " %s=%c%s%c", n->attrs[a].key, q, n->attrs[a].value, q);
  }
  fprintf(out, n->firstChild < 0 ? "/>\n" : ">\n");
}

ncclResult_t chrXmlWrite(const struct chrXml* xml, FILE* out) {
  if (xml->nNodes == 0) return chrFail(ncclInternalError, "topology: writing an empty tree");
  /* Depth-first without recursion: down to the first child, else on to the next sibling, closing
   * each parent on the way up. */
  int i = 0, level = 0;
  for (;;) {
    writeOpen(xml, i, level, out);
    if (xml->nodes[i].firstChild >= 0) {
      i = xml->nodes[i].firstChild;
      level++;
      continue;
    }
    while (xml->nodes[i].next < 0) {
      i = xml->nodes[i].parent;
      if (i < 0) goto end;
      level--;
      fprintf(out, "%*s</%s>\n", 2 * level, "", xml->nodes[i].name);
    }
    i = xml->nodes[i].next;
  }
end:
  if (ferror(out)) return chrFail(ncclSystemError, "%s: cannot write the topology", xml->path);
  return ncclSuccess;
}

ncclResult_t chrXmlWriteFile(const struct chrXml* xml, const char* path) {
  FILE* f = fopen(path, "w");
  if (!f) return chrFail(ncclSystemError, "%s: cannot write the topology dump: %s", path, strerror(errno));
  ncclResult_t res = chrXmlWrite(xml, f);
  if (fclose(f) != 0 && res == ncclSuccess)
    res = chrFail(ncclSystemError, "%s: cannot write the topology dump: %s", path, strerror(errno));
  return res;
}
