/*
 * broken_delegate.c — malformed delegates for the loader's refusal tests.
 * Each variant is selected with -D:
 *
 *   -DBROKEN_NO_ENTRY     exports a misspelt entry point only
 *   -DBROKEN_VERSION      speaks HAL 2.0–2.3 only
 *   -DBROKEN_SMALL_TABLE  reports a table that stops before release/close
 *   -DBROKEN_NULL_FN      a full-size table whose execute pointer is NULL
 *   -DBROKEN_OPEN_FAILS   the entry point refuses with a code and message
 *   -DBROKEN_EXECUTE      a working Relu delegate whose execute fails with
 *                         SY_RESOURCE_EXHAUSTED and a message
 *   -DBROKEN_CRASH        a Relu delegate whose execute dereferences NULL
 *                         (for the isolation tests of the out-of-process
 *                         loader; loaded in-process it kills the host)
 *   -DBROKEN_CTOR_EXIT    its constructor calls exit(3) as soon as it is
 *                         loaded (for the isolated probe: loaded in-process
 *                         it ends the host before any Switchyard code runs)
 *   -DBROKEN_CTOR_HANG    its constructor never returns (for the probe's
 *                         timeout)
 *   -DBROKEN_INFER        a Relu delegate whose infer_outputs lies about
 *                         output 0 as $SWITCHYARD_TEST_INFER says: huge
 *                         (2^28 elements), overflow (three dims of 2^40),
 *                         dtype (int64), rank (one more), negative (dim 0
 *                         = -5), badrank (rank 1000); the host must refuse
 *                         each before allocating
 *   -DBROKEN_MARKER       its constructor appends a line to the file named
 *                         by $SWITCHYARD_TEST_MARKER: proof that it was
 *                         loaded (the verify-then-load race test)
 *
 * None of them may crash the host: the loader must refuse the first five
 * with a readable reason and surface the execute error to the app; the
 * constructor variants must only ever run where the loader let them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "switchyard_delegate.h"

static int closes;

#ifdef BROKEN_CTOR_EXIT
__attribute__((constructor)) static void b_exit_at_load(void) {
  fprintf(stderr, "broken delegate: giving up in my constructor\n");
  exit(3);
}
#endif

#ifdef BROKEN_CTOR_HANG
#include <unistd.h>
__attribute__((constructor)) static void b_hang_at_load(void) {
  for (;;) pause();
}
#endif

#ifdef BROKEN_MARKER
__attribute__((constructor)) static void b_mark_loaded(void) {
  const char *path = getenv("SWITCHYARD_TEST_MARKER");
  if (path == NULL) return;
  FILE *f = fopen(path, "a");
  if (f == NULL) return;
  fputs("loaded\n", f);
  fclose(f);
}
#endif

static sy_code b_info(void *self, sy_info *info, sy_status *st) {
  (void)self;
  (void)st;
  info->device = SY_DEVICE_SIMULATED;
  info->name = "broken";
  info->vendor = "Switchyard tests";
  info->version = "0.0.1";
  info->description = "a deliberately broken delegate";
  return SY_OK;
}

static sy_code b_caps(void *self, sy_capabilities *caps, sy_status *st) {
  (void)self;
  (void)caps;
  (void)st;
  return SY_OK;
}

static sy_code b_supports(void *self, const sy_subgraph *sg, sy_verdict *v, sy_status *st) {
  (void)self;
  (void)st;
  for (uint32_t i = 0; i < sg->num_nodes; i++) {
    v[i].supported = strcmp(sg->nodes[i].op_type, "Relu") == 0;
    if (!v[i].supported) snprintf(v[i].reason, SY_REASON_CAPACITY, "only Relu");
  }
  return SY_OK;
}

static int exe_token;

static sy_code b_compile(void *self, const sy_subgraph *sg, const sy_compile_options *o, void **exe, sy_status *st) {
  (void)self;
  (void)sg;
  (void)o;
  (void)st;
  *exe = &exe_token;
  return SY_OK;
}

static sy_code b_infer(void *exe, const sy_execute_call *call, sy_status *st) {
  (void)exe;
  (void)st;
  for (uint32_t i = 0; i < call->num_outputs && i < call->num_inputs; i++) {
    call->outputs[i].dtype = call->inputs[i].dtype;
    call->outputs[i].rank = call->inputs[i].rank;
    memcpy(call->outputs[i].shape, call->inputs[i].shape, call->inputs[i].rank * sizeof(int64_t));
  }
#ifdef BROKEN_INFER
  const char *mode = getenv("SWITCHYARD_TEST_INFER");
  if (mode != NULL && call->num_outputs > 0) {
    sy_tensor *o = &call->outputs[0];
    if (strcmp(mode, "huge") == 0) {
      o->rank = 1;
      o->shape[0] = (int64_t)1 << 28;
    } else if (strcmp(mode, "overflow") == 0) {
      o->rank = 3;
      o->shape[0] = o->shape[1] = o->shape[2] = (int64_t)1 << 40;
    } else if (strcmp(mode, "dtype") == 0) {
      o->dtype = 7;
    } else if (strcmp(mode, "rank") == 0) {
      o->shape[o->rank] = 1;
      o->rank++;
    } else if (strcmp(mode, "negative") == 0) {
      o->shape[0] = -5;
    } else if (strcmp(mode, "badrank") == 0) {
      o->rank = 1000;
    }
  }
#endif
  return SY_OK;
}

static sy_code b_execute(void *exe, const sy_execute_call *call, sy_status *st) {
  (void)exe;
  (void)call;
#ifdef BROKEN_CRASH
  volatile int *nowhere = NULL;
  *nowhere = 1;
#endif
  snprintf(st->message, SY_MESSAGE_CAPACITY, "device queue 3 is out of memory (needed %u more bytes)", 4096u);
  st->code = SY_RESOURCE_EXHAUSTED;
  return SY_RESOURCE_EXHAUSTED;
}

static void b_release(void *exe) { (void)exe; }
static void b_close(void *self) {
  (void)self;
  closes++;
}

#ifdef BROKEN_NO_ENTRY
#define ENTRY switchyard_delegate_opne
#else
#define ENTRY switchyard_delegate_open
#endif

SY_EXPORT sy_code ENTRY(uint32_t host_major, uint32_t host_minor, sy_delegate_table *table, uint32_t capacity,
                        sy_status *status) {
  (void)host_major;
  (void)host_minor;
  sy_delegate_table t = {0};
  t.struct_size = sizeof t;
  t.hal_min.major = 1;
  t.hal_max.major = 1;
#ifdef BROKEN_VERSION
  t.hal_min.major = 2;
  t.hal_max.major = 2;
  t.hal_max.minor = 3;
#endif
  t.self = &closes;
  t.get_info = b_info;
  t.get_capabilities = b_caps;
  t.supports = b_supports;
  t.compile = b_compile;
  t.infer_outputs = b_infer;
  t.execute = b_execute;
  t.release = b_release;
  t.close = b_close;
#ifdef BROKEN_NULL_FN
  t.execute = NULL;
#endif
#ifdef BROKEN_SMALL_TABLE
  t.struct_size = (uint32_t)offsetof(sy_delegate_table, release);
#endif
#ifdef BROKEN_OPEN_FAILS
  snprintf(status->message, SY_MESSAGE_CAPACITY, "no accelerator found on bus 0");
  status->code = SY_UNAVAILABLE;
  return SY_UNAVAILABLE;
#endif
  (void)status;
  memcpy(table, &t, capacity < t.struct_size ? capacity : t.struct_size);
  return SY_OK;
}
