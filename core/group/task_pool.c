/* SPDX-License-Identifier: BSD-3-Clause */
/* task_pool.c: see task_pool.h. */
#include "group/task_pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define KEEP 16 /* tasks a thread keeps; a group of more calls frees the rest */

struct pool {
  int n;
  struct chrCollTask* kept[KEEP];
};

static __thread struct pool* pool;
static pthread_key_t poolKey; /* frees a thread's pool when the thread exits */
static pthread_once_t poolKeyOnce = PTHREAD_ONCE_INIT;

static void freeTask(struct chrCollTask* t) {
  free(t->works);
  free(t);
}

static void poolFree(void* p) {
  struct pool* pl = p;
  for (int i = 0; i < pl->n; i++) freeTask(pl->kept[i]);
  free(pl);
}

static void poolKeyCreate(void) { pthread_key_create(&poolKey, poolFree); }

struct chrCollTask* chrTaskNew(void) {
  if (pool == NULL || pool->n == 0) return calloc(1, sizeof(struct chrCollTask));
  struct chrCollTask* t = pool->kept[--pool->n];
  struct chrWork* works = t->works;
  const int cap = t->worksCap;
  memset(t, 0, sizeof(*t));
  t->works = works;
  t->worksCap = cap;
  return t;
}

void chrTaskFree(struct chrCollTask* t) {
  if (t == NULL) return;
  if (pool == NULL) {
    pthread_once(&poolKeyOnce, poolKeyCreate);
    pool = calloc(1, sizeof(*pool));
    if (pool != NULL && pthread_setspecific(poolKey, pool) != 0) {
      free(pool);
      pool = NULL;
    }
  }
  if (pool == NULL || pool->n == KEEP) {
    freeTask(t);
    return;
  }
  pool->kept[pool->n++] = t;
}
