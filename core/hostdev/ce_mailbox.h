/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_mailbox.h: the rendezvous of a copy-engine transfer (docs/design.md, "GPU buffers: copy-engine
 * sends"), in memory both ends map (one process, or two sharing a segment). Header-only, C and C++
 * (GCC's __atomic builtins on plain words), no CUDA: chorus-ce-probe (tools/gpu/ce_probe.cu) runs
 * it between two GPUs, tests/unit/test_ce_mailbox.c between two processes on the CPU. The copy
 * paths of the device library use it (device/copy_engine/ce_sends.cu, device/copy_engine/ce_kernels.cu).
 *
 * A mailbox is one direction between two ranks. Transfer k (1, 2, 3, ... in each direction, the
 * same numbering at both ends) uses slot k % CHR_CE_SLOTS. Each end posts what the other needs (its
 * buffer, opaque bytes here) and learns from one compare-and-swap on the slot's state which end came
 * first:
 *   - the first end's stream will wait until done[its role] >= k (the GPU waits, not the host);
 *   - the second end copies, then sets done[the first's role] = k (on the GPU, after the copy) and
 *     releases the slot, which frees it for transfer k + CHR_CE_SLOTS.
 * Neither end waits on the host for the other, except when it is CHR_CE_SLOTS transfers ahead in one
 * direction (chrCeSlotFree is then false until the other end catches up). ready[role] is a word an
 * end's stream may write (>= k once its data for transfer k is in place) for the second end to wait
 * for, in place of an event. done and ready only grow: a wait for ">= k" never misses a later value.
 * state = round << 2 | posted bits (1 << role), where transfer k is of round (k - 1) / CHR_CE_SLOTS:
 * a slot holds transfer k's round while k may use it, so an all-zero mailbox is ready for transfers
 * 1 .. CHR_CE_SLOTS (two processes may create and map it without an initializing step).
 *
 * Sender-copies mode (between processes: a GPU that drives both directions at once through CUDA IPC
 * moves about half the link each way, so each transfer must run on its sender's GPU). Both ends post
 * as above. A sender that comes second may copy from its own call (the copy engine) when the slot's
 * transfer before is done; both streams then wait for their done word. Otherwise the sender's stream
 * copies (a kernel, queued from the sender's call) once dst[slot] names the receiver's buffer in the
 * sender's process: the sender's agent thread, which the receiver's post (second) wakes, or the
 * sender's call when the receiver came first, writes it (chrCePublishDst) when the slot's transfer
 * before is done, and releases the slot. The copy sets done[RECV]; the receiver never copies nor
 * releases. done[role] is per slot: transfers that run by different means finish in any order.
 *
 * The receiver pulls (a variant of sender-copies mode, modelled in tests/unit/test_ce_mailbox.c, run
 * by the device library between processes, CHORUS_GPU_CE_PULL: device/copy_engine/ce_sends.h). A receiver that finds its
 * sender's post already there (chrCeOtherPosted before its own post, so it will come second), with
 * no engine copy in its launch yet, marks its post as a pull and copies on its own copy stream,
 * queued after its launch's kernel: it waits for both ready words, copies from the buffer the
 * sender's post names, and sets done[SEND] and done[RECV]. The sender's agent publishes
 * CHR_CE_DST_PULLED for such a post instead of a buffer, and the sender's kernel, finding it, copies
 * nothing and waits until done[SEND] >= k (its buffer is read until then). The pull's done word
 * frees the slot before the sender's kernel has looked, so the agent may publish the slot's next
 * transfer first: the kernel reads dstK, dstPtr, dstK again (a seqlock: dstPtr is written first),
 * and a dstK past k means its transfer was pulled.
 */
#ifndef CHORUS_HOSTDEV_CE_MAILBOX_H_
#define CHORUS_HOSTDEV_CE_MAILBOX_H_

#include <stdint.h>
#include <string.h>

#define CHR_CE_SLOTS 16
#define CHR_CE_POST_BYTES 96
enum { CHR_CE_SEND = 0, CHR_CE_RECV = 1 };
#define CHR_CE_DST_PULLED 1ull /* dstPtr of a transfer its receiver pulls (no buffer is ever at address 1) */

struct chrCePost {
  unsigned char bytes[CHR_CE_POST_BYTES]; /* what the other end needs: a buffer's handle and offset, ... */
};

struct chrCeMailbox {
  uint64_t state[CHR_CE_SLOTS];
  struct chrCePost post[CHR_CE_SLOTS][2];
  uint64_t done[2][CHR_CE_SLOTS]; /* done[role][k % CHR_CE_SLOTS] >= k: transfer k is done for that end */
  uint64_t ready[2][8];           /* ready[role][0] */
  uint64_t dstK[CHR_CE_SLOTS];    /* sender-copies mode: >= k once dstPtr[slot] holds transfer k's */
  uint64_t dstPtr[CHR_CE_SLOTS];  /* the receiver's buffer in the sender's process; 0: copy nothing */
};

/* The done word of transfer k for `role`. */
static inline uint64_t* chrCeDone(struct chrCeMailbox* mb, int role, uint64_t k) {
  return &mb->done[role][k % CHR_CE_SLOTS];
}

/* A mailbox before its first transfer: all zero. */
static inline void chrCeMailboxInit(struct chrCeMailbox* mb) { memset(mb, 0, sizeof(*mb)); }

/* The round of transfer k (k >= 1): the value its slot's state holds above the posted bits. */
static inline uint64_t chrCeRound(uint64_t k) { return (k - 1) / CHR_CE_SLOTS; }

/* 1 when transfer k's slot is free for it (the transfer k - CHR_CE_SLOTS has released it). */
static inline int chrCeSlotFree(const struct chrCeMailbox* mb, uint64_t k) {
  return (__atomic_load_n(&mb->state[k % CHR_CE_SLOTS], __ATOMIC_ACQUIRE) >> 2) == chrCeRound(k);
}

/* Posts `mine` as `role` for transfer k, whose slot must be free (chrCeSlotFree), with one atomic OR
 * on the slot's state. Returns 1 when this end came first (nothing more to do on the host), 0 when second: *other then holds the first end's
 * post, and the caller copies and then calls chrCeRelease. */
static inline int chrCePost(struct chrCeMailbox* mb, int role, uint64_t k, const struct chrCePost* mine,
                            struct chrCePost* other) {
  const int slot = (int)(k % CHR_CE_SLOTS);
  mb->post[slot][role] = *mine;
  /* both ends set their bit (the sender-issued mode's agent looks for the receiver's), and the one
   * that finds the other's already set came second */
  const uint64_t before = __atomic_fetch_or(&mb->state[slot], (uint64_t)1 << role, __ATOMIC_ACQ_REL);
  if (!(before & ((uint64_t)1 << (1 - role)))) return 1;
  *other = mb->post[slot][1 - role];
  return 0;
}

/* Sender-copies mode, the sender's agent: transfer k's destination in the sender's process (0 when
 * the copy cannot run: its kernel then copies nothing but still ends the transfer). */
static inline void chrCePublishDst(struct chrCeMailbox* mb, uint64_t k, uint64_t ptr) {
  const int slot = (int)(k % CHR_CE_SLOTS);
  __atomic_store_n(&mb->dstPtr[slot], ptr, __ATOMIC_RELAXED);
  __atomic_store_n(&mb->dstK[slot], k, __ATOMIC_RELEASE);
}

/* Sender-copies mode: 1 when the other end (of role 1 - role) has posted transfer k, whose slot holds
 * generation k; *other then holds its post. */
static inline int chrCeOtherPosted(struct chrCeMailbox* mb, int role, uint64_t k, struct chrCePost* other) {
  const int slot = (int)(k % CHR_CE_SLOTS);
  const uint64_t s = __atomic_load_n(&mb->state[slot], __ATOMIC_ACQUIRE);
  if (s >> 2 != chrCeRound(k) || !(s & (1u << (1 - role)))) return 0;
  *other = mb->post[slot][1 - role];
  return 1;
}

/* The second end, once it no longer needs the first's post: the slot is free for k + CHR_CE_SLOTS. */
static inline void chrCeRelease(struct chrCeMailbox* mb, uint64_t k) {
  __atomic_store_n(&mb->state[k % CHR_CE_SLOTS], (chrCeRound(k) + 1) << 2, __ATOMIC_RELEASE);
}

#endif /* CHORUS_HOSTDEV_CE_MAILBOX_H_ */
