/*
 * tree_allreduce.c: all-reduce on two binary trees (a "double binary tree").
 *
 * Trees are built over ring positions (ranks of one host are adjacent there). Tree 0 is a binary
 * tree rooted at position 0 whose shape comes from the binary digits of the position; tree 1 is
 * the mirror image (position n-1-p), so the leaves of one tree are inner nodes of the other and
 * both halves of the bandwidth are used. Tree t reduces half t of the elements: up the tree
 * (children -> parent, reduce with the local input), then back down (parent -> children).
 *
 * Lanes (the task's "channels"): lane 2t is tree t's upward pass, lane 2t+1 its downward pass, so
 * the two passes pipeline independently chunk by chunk. The root has no parent: its single lane
 * (2t) receives from its children, finishes the reduction, writes the output and sends it straight
 * back down; its lane 2t+1 is empty. Tree t's links use point-to-point connection index t.
 */
#include "comm/comm.h"
#include "exec/ring.h"

#define TREE_LANES 4

struct treeNode {
  int parent;    /* rank, or -1 */
  int child[2];  /* ranks, or -1 */
  int nChildren;
};

/* Binary tree over positions 0..n-1 rooted at 0: position p's lowest set bit b makes it the parent
 * of p-b/2 and p+b/2 (when those exist) and the child of the position with that bit cleared and the
 * next one set (or cleared only, when that is past the end). */
void chrBinaryTree(int p, int n, int* parent, int* c0, int* c1) {
  int bit = 1;
  while (bit < n && !(p & bit)) bit <<= 1;
  if (p == 0) {
    *parent = -1;
    int top = 1;
    while (top * 2 < n) top *= 2;
    *c0 = n > 1 ? top : -1;
    *c1 = -1;
    return;
  }
  int up = (p ^ bit) | (bit << 1);
  if (up >= n) up = p ^ bit;
  *parent = up;
  int low = bit >> 1;
  *c0 = low ? p - low : -1;
  int d1 = -1;
  for (int l = low; l > 0; l >>= 1)
    if (p + l < n) { d1 = p + l; break; }
  *c1 = d1;
}

static void treeOf(const struct chrCollTask* t, int tree, struct treeNode* node) {
  int n = t->comm->nRanks;
  int p = tree == 0 ? t->ringPos : n - 1 - t->ringPos;
  int parent, c0, c1;
  chrBinaryTree(p, n, &parent, &c0, &c1);
  /* Map positions back (mirror for tree 1) and then to ranks. */
  int map[3] = {parent, c0, c1};
  for (int i = 0; i < 3; i++)
    if (map[i] >= 0) map[i] = chrRingRank(t->comm, tree == 0 ? map[i] : n - 1 - map[i]);
  node->parent = map[0];
  node->nChildren = 0;
  if (map[1] >= 0) node->child[node->nChildren++] = map[1];
  if (map[2] >= 0) node->child[node->nChildren++] = map[2];
}

/* Half `tree` of the elements: [start, start + count). */
static void half(const struct chrCollTask* t, int tree, size_t* start, size_t* count) {
  chrChannelRange(t->count, 2, tree, start, count);
}

static void use(struct chrLinkUse* u, int peer, int isSend, int tree) {
  u->peer = peer;
  u->isSend = isSend;
  u->p2p = 1;
  u->conn = tree;
}

/* Link indices per lane. Root lane: children's recv links [0, nc), their send links [nc, 2nc).
 * Up lane: children's recv links [0, nc), the parent's send link nc. Down lane: children's send
 * links [0, nc), the parent's recv link nc. */
static int links(const struct chrCollTask* t, int lane, struct chrLinkUse* uses) {
  int tree = lane / 2, down = lane % 2;
  struct treeNode node;
  treeOf(t, tree, &node);
  int nc = node.nChildren;
  if (node.parent < 0) {
    if (down) return 0;
    for (int i = 0; i < nc; i++) {
      use(&uses[i], node.child[i], 0, tree);
      use(&uses[nc + i], node.child[i], 1, tree);
    }
    return 2 * nc;
  }
  for (int i = 0; i < nc; i++) use(&uses[i], node.child[i], down, tree);
  use(&uses[nc], node.parent, !down, tree);
  return nc + 1;
}

static void counts(const struct chrCollTask* t, int lane, uint64_t* nSteps, uint64_t* nRecvs) {
  int tree = lane / 2, down = lane % 2;
  struct treeNode node;
  treeOf(t, tree, &node);
  size_t start, count;
  half(t, tree, &start, &count);
  uint64_t chunks = count == 0 ? 0 : DIVUP(count, t->chunkElems);
  *nSteps = (node.parent < 0 && down) ? 0 : chunks;
  for (int i = 0; i < CHR_TASK_MAX_LINKS; i++) nRecvs[i] = 0;
  if (node.parent < 0) {
    for (int i = 0; i < node.nChildren; i++) nRecvs[i] = chunks; /* children's partial sums */
  } else if (!down) {
    for (int i = 0; i < node.nChildren; i++) nRecvs[i] = chunks;
  } else {
    nRecvs[node.nChildren] = chunks; /* from the parent */
  }
}

static void step(const struct chrCollTask* t, int lane, uint64_t index, struct chrStep* st) {
  int tree = lane / 2, down = lane % 2;
  struct treeNode node;
  treeOf(t, tree, &node);
  size_t start, count;
  half(t, tree, &start, &count);
  size_t off = start + (size_t)index * t->chunkElems;
  size_t len = start + count - off;
  if (len > t->chunkElems) len = t->chunkElems;
  chrStepInit(st, 0, 0);
  st->count = len;
  size_t byteOff = off * t->typeSize;
  int nc = node.nChildren;
  if (node.parent < 0) {          /* root: reduce up, write out, send down */
    st->nRecv = nc;
    for (int i = 0; i < nc; i++) st->recv[i] = i;
    st->nSend = nc;
    for (int i = 0; i < nc; i++) st->send[i] = nc + i;
    st->local = (const char*)t->sendbuff + byteOff;
    st->out = (char*)t->recvbuff + byteOff;
    st->final = 1;
  } else if (!down) {             /* up: children + local -> parent */
    st->nRecv = nc;
    for (int i = 0; i < nc; i++) st->recv[i] = i;
    st->nSend = 1;
    st->send[0] = nc;
    st->local = (const char*)t->sendbuff + byteOff;
  } else {                        /* down: parent -> out and children */
    st->nRecv = 1;
    st->recv[0] = nc;
    st->nSend = nc;
    for (int i = 0; i < nc; i++) st->send[i] = i;
    st->out = (char*)t->recvbuff + byteOff;
  }
}

const struct chrAlgo chrTreeAllReduce = {"TREE", links, counts, step};
const int chrTreeLanes = TREE_LANES;
