/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tree_shape.c: the binary trees of the tree all-reduce are trees: one root (position 0), every
 * other position has exactly one parent that lists it as a child, no cycles, depth about log2(n).
 */
#include <stdio.h>
#include <stdlib.h>

void chrBinaryTree(int p, int n, int* parent, int* c0, int* c1);

int main(void) {
  int failures = 0;
  for (int n = 1; n <= 300; n++) {
    int* parent = malloc(sizeof(int) * n);
    int* c0 = malloc(sizeof(int) * n);
    int* c1 = malloc(sizeof(int) * n);
    for (int p = 0; p < n; p++) chrBinaryTree(p, n, &parent[p], &c0[p], &c1[p]);
    int maxDepth = 0;
    for (int p = 0; p < n; p++) {
      if ((p == 0) != (parent[p] < 0)) { fprintf(stderr, "n=%d p=%d: parent %d\n", n, p, parent[p]); failures++; continue; }
      if (p > 0) {
        int q = parent[p];
        if (q < 0 || q >= n || (c0[q] != p && c1[q] != p)) {
          fprintf(stderr, "n=%d p=%d: parent %d does not list it (children %d %d)\n", n, p, q, q >= 0 && q < n ? c0[q] : -9,
                  q >= 0 && q < n ? c1[q] : -9);
          failures++;
        }
      }
      int kids[2] = {c0[p], c1[p]};
      for (int k = 0; k < 2; k++)
        if (kids[k] >= 0 && (kids[k] >= n || parent[kids[k]] != p)) {
          fprintf(stderr, "n=%d p=%d: child %d does not point back\n", n, p, kids[k]);
          failures++;
        }
      if (c0[p] >= 0 && c0[p] == c1[p]) { fprintf(stderr, "n=%d p=%d: same child twice\n", n, p); failures++; }
      int depth = 0, q = p;
      while (q > 0 && depth <= n) { q = parent[q]; depth++; }
      if (depth > n) { fprintf(stderr, "n=%d p=%d: cycle\n", n, p); failures++; }
      if (depth > maxDepth) maxDepth = depth;
    }
    int log2n = 0;
    while ((1 << log2n) < n) log2n++;
    if (maxDepth > log2n + 1) { fprintf(stderr, "n=%d: depth %d > log2(n)+1\n", n, maxDepth); failures++; }
    free(parent);
    free(c0);
    free(c1);
  }
  return failures ? 1 : 0;
}
