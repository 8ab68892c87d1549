/*
 * example_delegate.c — a complete Switchyard delegate in C.
 *
 * It takes float32 Add, Sub, Mul, Div (with ONNX multidirectional
 * broadcasting), Relu and MatMul (with ONNX/numpy batch broadcasting and 1-D
 * promotion) and runs them with plain loops on the CPU. It is written to be
 * copied: every function of the table is implemented, every declined node
 * gets a reason, every error carries a code and a message, and nothing
 * the host passes in is kept after a call returns (constants are copied at
 * compile time).
 *
 * Build: make (see Makefile) -> libswitchyard_example.so
 *
 * HAL 1.1: it lists its devices (SY_EXAMPLE_DEVICES of them, default 1,
 * each a CPU "device" with its own buffers), compiles for the device and
 * precision asked (float16/bfloat16 when the caller opts in: every node's
 * float32 result is rounded to that precision, and compile reports it),
 * honours shape bounds (execute declines inputs outside them with
 * SY_UNSUPPORTED, which the host turns into hal.ErrDeclined) and profiles
 * calls (one kernel per node, CLOCK_MONOTONIC nanoseconds), both execute's
 * and enqueued ones (enqueue_with_options + fence_profile).
 *
 * Test builds: -DSY_EXAMPLE_HAL_1_0 builds a HAL 1.0 delegate (the table
 * and every struct as the 1.0 header had them: no devices, no profiles, no
 * device memory; it refuses structs that are not 1.0-sized, to prove the
 * host sends them); -DSY_EXAMPLE_DEVICES=N lists N devices;
 * -DSY_EXAMPLE_TABLE_1_1_DEVMEM ends the table at release_fence, as a
 * library built against the first HAL 1.1 header (device memory, no
 * profiled enqueue); -DSY_EXAMPLE_FENCES_NEVER_SIGNAL makes every enqueued call's fence pend
 * forever, like a wedged device (wait_fence sleeps out its timeout), for
 * the host's deadline tests.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include "switchyard_delegate.h"

#define EX_MAX_RANK 8

#ifndef SY_EXAMPLE_DEVICES
#define SY_EXAMPLE_DEVICES 1
#endif
#if SY_EXAMPLE_DEVICES < 1 || SY_EXAMPLE_DEVICES > SY_MAX_DEVICES
#error "SY_EXAMPLE_DEVICES must be 1..SY_MAX_DEVICES"
#endif

/* ---------------------------------------------------------------- status */

static sy_code fail(sy_status *st, sy_code code, const char *fmt, ...) {
  if (st) {
    va_list ap;
    va_start(ap, fmt);
    st->code = code;
    vsnprintf(st->message, SY_MESSAGE_CAPACITY, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* ------------------------------------------------------------- op table */

typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_RELU, OP_MATMUL, OP_UNKNOWN } op_kind;

static const char *const op_names[] = {"Add", "Sub", "Mul", "Div", "Relu", "MatMul"};

static op_kind op_of(const char *op_type) {
  for (int k = 0; k < OP_UNKNOWN; k++)
    if (strcmp(op_type, op_names[k]) == 0) return (op_kind)k;
  return OP_UNKNOWN;
}

static int op_arity(op_kind k) { return k == OP_RELU ? 1 : 2; }

static int64_t opset_of(const sy_subgraph *sg, const char *domain) {
  for (uint32_t i = 0; i < sg->num_opsets; i++) {
    const char *d = sg->opsets[i].domain;
    if (strcmp(d, domain) == 0 || (domain[0] == 0 && strcmp(d, "ai.onnx") == 0)) return sg->opsets[i].version;
  }
  return 0;
}

/* ------------------------------------------------------------ instance */

/* HAL 1.1 state: buffers and fences live in tables and are named to the
 * host by handles (ids), never by address, so a forged or stale handle is
 * found out by a lookup instead of being dereferenced. */
typedef struct {
  sy_buffer id; /* 0 = free slot */
  int32_t device;
  int32_t rank;
  int64_t shape[EX_MAX_RANK];
  float *data;
  uint64_t num_bytes;
} ex_buffer;

/* a call's profile as the example records it: one kernel per node */
typedef struct {
  int32_t device;
  int64_t start_ns, end_ns;
  uint32_t num_kernels;
  sy_kernel_timing *kernels; /* malloc'd, num_kernels */
  int32_t *nodes;            /* node index of each kernel */
} ex_profile;

typedef struct {
  sy_fence id; /* 0 = free slot */
  int32_t pending; /* never signals (SY_EXAMPLE_FENCES_NEVER_SIGNAL) */
  sy_code result;
  char message[SY_MESSAGE_CAPACITY];
  int32_t profiled; /* enqueued with SY_ENQUEUE_PROFILE: prof holds the call's profile */
  ex_profile prof;
} ex_fence;

typedef struct {
  pthread_mutex_t mu;
  uint64_t next_id;
  ex_buffer *bufs;
  size_t num_bufs;
  ex_fence *fences;
  size_t num_fences;
} example_delegate;

static const int32_t float_only[] = {SY_DTYPE_FLOAT32};
static const char *const layouts[] = {"NCHW"};
static sy_op_capability caps_ops[OP_UNKNOWN];
#ifndef SY_EXAMPLE_HAL_1_0
static sy_device_desc caps_devices[SY_EXAMPLE_DEVICES];
static char device_names[SY_EXAMPLE_DEVICES][32];
#endif

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static sy_code ex_get_info(void *self, sy_info *info, sy_status *st) {
  (void)self;
  (void)st;
  info->device = SY_DEVICE_CPU;
  info->name = "c-example";
  info->vendor = "Switchyard SDK example";
  info->version = "1.1.0";
  info->description = "example C delegate: float32 Add/Sub/Mul/Div/Relu/MatMul with ONNX broadcasting";
  info->flags = 0; /* execute is reentrant */
#ifndef SY_EXAMPLE_HAL_1_0
  info->flags |= SY_INFO_CALL_PROFILES;
#endif
  return SY_OK;
}

static sy_code ex_get_capabilities(void *self, sy_capabilities *caps, sy_status *st) {
  (void)self;
#ifdef SY_EXAMPLE_HAL_1_0
  if (caps->struct_size != SY_CAPABILITIES_SIZE_1_0)
    return fail(st, SY_INTERNAL, "a HAL 1.0 delegate was given a %u-byte sy_capabilities", caps->struct_size);
#else
  (void)st;
#endif
  for (int k = 0; k < OP_UNKNOWN; k++) {
    caps_ops[k].domain = "";
    caps_ops[k].op_type = op_names[k];
    caps_ops[k].min_opset = k == OP_RELU ? 6 : (k == OP_MATMUL ? 1 : 7);
    caps_ops[k].max_opset = 0;
    caps_ops[k].dtypes = float_only;
    caps_ops[k].num_dtypes = 1;
    caps_ops[k].max_rank = EX_MAX_RANK;
  }
  caps->num_ops = OP_UNKNOWN;
  caps->ops = caps_ops;
  caps->layouts = layouts;
  caps->num_layouts = 1;
  caps->max_inputs = 0;
  caps->max_tensor_bytes = 0;
  caps->control_flow = 0;
#ifndef SY_EXAMPLE_HAL_1_0
  if (SY_HAS_FIELD(caps, sy_capabilities, devices)) {
    for (int i = 0; i < SY_EXAMPLE_DEVICES; i++) {
      sy_device_desc *d = &caps_devices[i];
      snprintf(device_names[i], sizeof device_names[i], "example-cpu%d", i);
      d->kind = SY_DEVICE_CPU;
      d->memory_kinds = 1u << SY_MEMORY_HOST | 1u << SY_MEMORY_DEVICE_LOCAL;
      d->name = device_names[i];
      d->memory_bytes = (int64_t)1 << 34;
      d->max_buffer_bytes = (int64_t)1 << 32; /* EX_MAX_BUFFER_BYTES */
      d->precisions = 1u << SY_PRECISION_FLOAT32 | 1u << SY_PRECISION_FLOAT16 | 1u << SY_PRECISION_BFLOAT16;
      d->cache_vendor = "Switchyard SDK example";
      d->cache_device = device_names[i];
      d->cache_driver = "1.1.0";
    }
    caps->num_devices = SY_EXAMPLE_DEVICES;
    caps->device_desc_size = sizeof(sy_device_desc);
    caps->devices = caps_devices;
  }
#endif
  return SY_OK;
}

/* why a node is declined, or NULL. buf receives formatted reasons. */
static const char *decline_reason(const sy_subgraph *sg, const sy_node *n, char *buf, size_t cap) {
  if (n->domain[0] != 0 && strcmp(n->domain, "ai.onnx") != 0) {
    snprintf(buf, cap, "domain %s is not handled", n->domain);
    return buf;
  }
  op_kind k = op_of(n->op_type);
  if (k == OP_UNKNOWN) {
    snprintf(buf, cap, "op %s is not implemented by the example delegate", n->op_type);
    return buf;
  }
  int64_t opset = opset_of(sg, "");
  int64_t min = k == OP_RELU ? 6 : (k == OP_MATMUL ? 1 : 7);
  if (opset < min) {
    snprintf(buf, cap, "%s at opset %lld (only opset %lld and later)", n->op_type, (long long)opset, (long long)min);
    return buf;
  }
  if ((int)n->num_inputs != op_arity(k) || n->num_outputs != 1) {
    snprintf(buf, cap, "%s with %u inputs and %u outputs", n->op_type, n->num_inputs, n->num_outputs);
    return buf;
  }
  for (uint32_t i = 0; i < n->num_inputs + n->num_outputs; i++) {
    int32_t v = i < n->num_inputs ? n->inputs[i] : n->outputs[i - n->num_inputs];
    if (v < 0 || (uint32_t)v >= sg->num_values) {
      snprintf(buf, cap, "omitted or out-of-range value index %d", v);
      return buf;
    }
    const sy_value *val = &sg->values[v];
    if (!val->is_tensor) {
      snprintf(buf, cap, "value %s is not a tensor", val->name);
      return buf;
    }
    if (val->dtype != SY_DTYPE_FLOAT32) {
      if (val->dtype == SY_DTYPE_UNDEFINED)
        snprintf(buf, cap, "dtype of %s is unknown (only float32 is handled)", val->name);
      else
        snprintf(buf, cap, "dtype %d of %s (only float32 is handled)", val->dtype, val->name);
      return buf;
    }
    if (val->rank > EX_MAX_RANK) {
      snprintf(buf, cap, "%s has rank %d (at most %d)", val->name, val->rank, EX_MAX_RANK);
      return buf;
    }
    if (k == OP_MATMUL && i < 2 && val->rank == 0) {
      snprintf(buf, cap, "MatMul operand %s is a scalar", val->name);
      return buf;
    }
  }
  for (uint32_t a = 0; a < n->num_attributes; a++) {
    snprintf(buf, cap, "unexpected attribute %s", n->attributes[a].name);
    return buf;
  }
  return NULL;
}

static sy_code ex_supports(void *self, const sy_subgraph *sg, sy_verdict *verdicts, sy_status *st) {
  (void)self;
  (void)st;
  for (uint32_t i = 0; i < sg->num_nodes; i++) {
    const char *why = decline_reason(sg, &sg->nodes[i], verdicts[i].reason, SY_REASON_CAPACITY);
    if (why == NULL) {
      verdicts[i].supported = 1;
      verdicts[i].reason[0] = 0;
    } else {
      verdicts[i].supported = 0;
      if (why != verdicts[i].reason) snprintf(verdicts[i].reason, SY_REASON_CAPACITY, "%s", why);
    }
  }
  return SY_OK;
}

/* ---------------------------------------------------------- executable */

typedef struct {
  op_kind kind;
  int32_t in[2];
  int32_t out;
  int32_t node; /* its index in the subgraph's nodes (for profiles) */
} ex_node;

/* shape bounds of one input (rank -1: none) */
typedef struct {
  int32_t rank;
  int64_t min[EX_MAX_RANK], max[EX_MAX_RANK];
} ex_bound;

static const char *const kernel_names[] = {"add_f32", "sub_f32", "mul_f32", "div_f32", "relu_f32", "matmul_f32"};

typedef struct {
  uint32_t num_values;
  float **const_data;      /* per value: a private copy, or NULL */
  int32_t *const_rank;
  int64_t (*const_shape)[EX_MAX_RANK];
  uint32_t num_nodes;
  ex_node *nodes;          /* topological order */
  uint32_t num_inputs, num_outputs;
  int32_t *inputs, *outputs;
  /* HAL 1.1 */
  int32_t device;    /* the device compiled for */
  int32_t precision; /* SY_PRECISION_* results are rounded to */
  ex_bound *bounds;  /* per input */
} ex_exec;

static void ex_release(void *p) {
  ex_exec *e = p;
  if (!e) return;
  if (e->const_data)
    for (uint32_t v = 0; v < e->num_values; v++) free(e->const_data[v]);
  free(e->const_data);
  free(e->const_rank);
  free(e->const_shape);
  free(e->nodes);
  free(e->inputs);
  free(e->outputs);
  free(e->bounds);
  free(e);
}

static sy_code ex_compile(void *self, const sy_subgraph *sg, const sy_compile_options *opts, void **out, sy_status *st) {
  (void)self;
  char why[SY_REASON_CAPACITY];
#ifdef SY_EXAMPLE_HAL_1_0
  if (opts->struct_size != SY_COMPILE_OPTIONS_SIZE_1_0)
    return fail(st, SY_INTERNAL, "a HAL 1.0 delegate was given a %u-byte sy_compile_options", opts->struct_size);
#else
  int32_t device = 0, precision = SY_PRECISION_FLOAT32;
  if (SY_HAS_FIELD(opts, sy_compile_options, report)) {
    device = opts->device;
    precision = opts->precision;
    if (device < 0 || device >= SY_EXAMPLE_DEVICES)
      return fail(st, SY_INVALID_ARGUMENT, "device %d (the example has %d)", device, SY_EXAMPLE_DEVICES);
    if (precision < SY_PRECISION_FLOAT32 || precision > SY_PRECISION_BFLOAT16)
      return fail(st, SY_INVALID_ARGUMENT, "unknown precision %d", precision);
    for (uint32_t b = 0; b < opts->num_shape_bounds; b++) {
      const sy_shape_bound *sb = &opts->shape_bounds[b];
      if (sb->input < 0 || (uint32_t)sb->input >= sg->num_inputs || sb->rank < 0 || sb->rank > EX_MAX_RANK || (sb->rank && !sb->dims))
        return fail(st, SY_INVALID_ARGUMENT, "shape bound %u: input %d, rank %d", b, sb->input, sb->rank);
    }
  }
#endif

  for (uint32_t i = 0; i < sg->num_nodes; i++) {
    if (decline_reason(sg, &sg->nodes[i], why, sizeof why))
      return fail(st, SY_UNSUPPORTED, "node %u (%s %s): %s", i, sg->nodes[i].op_type, sg->nodes[i].name, why);
  }
  ex_exec *e = calloc(1, sizeof *e);
  if (!e) return fail(st, SY_RESOURCE_EXHAUSTED, "out of memory");
  e->num_values = sg->num_values;
  e->const_data = calloc(sg->num_values ? sg->num_values : 1, sizeof *e->const_data);
  e->const_rank = calloc(sg->num_values ? sg->num_values : 1, sizeof *e->const_rank);
  e->const_shape = calloc(sg->num_values ? sg->num_values : 1, sizeof *e->const_shape);
  e->nodes = calloc(sg->num_nodes ? sg->num_nodes : 1, sizeof *e->nodes);
  e->inputs = calloc(sg->num_inputs ? sg->num_inputs : 1, sizeof *e->inputs);
  e->outputs = calloc(sg->num_outputs ? sg->num_outputs : 1, sizeof *e->outputs);
  e->bounds = calloc(sg->num_inputs ? sg->num_inputs : 1, sizeof *e->bounds);
  if (!e->const_data || !e->const_rank || !e->const_shape || !e->nodes || !e->inputs || !e->outputs || !e->bounds) {
    ex_release(e);
    return fail(st, SY_RESOURCE_EXHAUSTED, "out of memory");
  }
  /* copy the constants: the subgraph is only valid during this call */
  for (uint32_t v = 0; v < sg->num_values; v++) {
    int32_t c = sg->values[v].constant;
    e->const_rank[v] = -1;
    if (c < 0) continue;
    if ((uint32_t)c >= sg->num_constants) {
      ex_release(e);
      return fail(st, SY_INVALID_ARGUMENT, "value %s refers to constant %d of %u", sg->values[v].name, c, sg->num_constants);
    }
    const sy_tensor *t = &sg->constants[c];
    if (t->dtype != SY_DTYPE_FLOAT32) continue; /* not read by any claimed node */
    if (t->rank > EX_MAX_RANK) {
      ex_release(e);
      return fail(st, SY_UNSUPPORTED, "constant %s has rank %d", sg->values[v].name, t->rank);
    }
    e->const_rank[v] = t->rank;
    for (int d = 0; d < t->rank; d++) e->const_shape[v][d] = t->shape[d];
    e->const_data[v] = malloc(t->num_bytes ? t->num_bytes : 1);
    if (!e->const_data[v]) {
      ex_release(e);
      return fail(st, SY_RESOURCE_EXHAUSTED, "out of memory copying constant %s (%llu bytes)", sg->values[v].name,
                  (unsigned long long)t->num_bytes);
    }
    if (t->num_bytes) memcpy(e->const_data[v], t->data, t->num_bytes);
  }
  e->num_nodes = sg->num_nodes;
  for (uint32_t j = 0; j < sg->num_nodes; j++) {
    uint32_t i = sg->topo_order[j];
    if (i >= sg->num_nodes) {
      ex_release(e);
      return fail(st, SY_INVALID_ARGUMENT, "topological order names node %u of %u", i, sg->num_nodes);
    }
    const sy_node *n = &sg->nodes[i];
    e->nodes[j].kind = op_of(n->op_type);
    e->nodes[j].in[0] = n->inputs[0];
    e->nodes[j].in[1] = n->num_inputs > 1 ? n->inputs[1] : -1;
    e->nodes[j].out = n->outputs[0];
    e->nodes[j].node = (int32_t)i;
  }
  for (uint32_t i = 0; i < sg->num_inputs; i++) e->bounds[i].rank = -1;
#ifndef SY_EXAMPLE_HAL_1_0
  e->device = device;
  /* float16/bfloat16 only where the caller opted in; the report says so */
  e->precision = precision;
  if (SY_HAS_FIELD(opts, sy_compile_options, report)) {
    for (uint32_t b = 0; b < opts->num_shape_bounds; b++) {
      const sy_shape_bound *sb = &opts->shape_bounds[b];
      ex_bound *eb = &e->bounds[sb->input];
      eb->rank = sb->rank;
      for (int32_t d = 0; d < sb->rank; d++) {
        eb->min[d] = sb->dims[d].min;
        eb->max[d] = sb->dims[d].max;
      }
    }
    if (opts->report && SY_HAS_FIELD(opts->report, sy_compile_report, precision)) opts->report->precision = e->precision;
  }
#endif
  e->num_inputs = sg->num_inputs;
  e->num_outputs = sg->num_outputs;
  memcpy(e->inputs, sg->inputs, sg->num_inputs * sizeof(int32_t));
  memcpy(e->outputs, sg->outputs, sg->num_outputs * sizeof(int32_t));
  *out = e;
  return SY_OK;
}

/* ------------------------------------------------------ shapes & kernels */

typedef struct {
  int32_t rank; /* -1 = not known yet */
  int64_t shape[EX_MAX_RANK];
  float *data;
  int owned; /* data was malloc'd by execute */
} ex_val;

static int64_t numel(const ex_val *v) {
  int64_t n = 1;
  for (int d = 0; d < v->rank; d++) n *= v->shape[d];
  return n;
}

static sy_code broadcast_shape(const ex_val *a, const ex_val *b, ex_val *o, sy_status *st, const char *op) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  o->rank = r;
  for (int d = 0; d < r; d++) {
    int ia = d - (r - a->rank), ib = d - (r - b->rank);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return fail(st, SY_INVALID_ARGUMENT, "%s: shapes cannot broadcast: dim %d is %lld vs %lld", op, d, (long long)da,
                  (long long)db);
    o->shape[d] = da == 1 ? db : da;
  }
  return SY_OK;
}

static sy_code matmul_shape(const ex_val *a, const ex_val *b, ex_val *o, sy_status *st) {
  if (a->rank < 1 || b->rank < 1) return fail(st, SY_INVALID_ARGUMENT, "MatMul: scalar operand");
  int64_t k1 = a->shape[a->rank - 1];
  int64_t k2 = b->rank == 1 ? b->shape[0] : b->shape[b->rank - 2];
  if (k1 != k2)
    return fail(st, SY_INVALID_ARGUMENT, "MatMul: inner dimensions differ (%lld vs %lld)", (long long)k1, (long long)k2);
  ex_val ba = {0}, bb = {0}, bo = {0};
  ba.rank = a->rank > 2 ? a->rank - 2 : 0;
  bb.rank = b->rank > 2 ? b->rank - 2 : 0;
  memcpy(ba.shape, a->shape, ba.rank * sizeof(int64_t));
  memcpy(bb.shape, b->shape, bb.rank * sizeof(int64_t));
  sy_code c = broadcast_shape(&ba, &bb, &bo, st, "MatMul batch");
  if (c) return c;
  o->rank = bo.rank;
  memcpy(o->shape, bo.shape, bo.rank * sizeof(int64_t));
  if (a->rank >= 2) o->shape[o->rank++] = a->shape[a->rank - 2];
  if (b->rank >= 2) o->shape[o->rank++] = b->shape[b->rank - 1];
  if (o->rank > EX_MAX_RANK) return fail(st, SY_UNSUPPORTED, "MatMul: result rank %d", o->rank);
  return SY_OK;
}

static sy_code node_shape(const ex_node *n, ex_val *vals, sy_status *st) {
  ex_val *a = &vals[n->in[0]], *o = &vals[n->out];
  if (a->rank < 0) return fail(st, SY_INTERNAL, "input value %d has no shape", n->in[0]);
  if (n->kind == OP_RELU) {
    o->rank = a->rank;
    memcpy(o->shape, a->shape, a->rank * sizeof(int64_t));
    return SY_OK;
  }
  ex_val *b = &vals[n->in[1]];
  if (b->rank < 0) return fail(st, SY_INTERNAL, "input value %d has no shape", n->in[1]);
  if (n->kind == OP_MATMUL) return matmul_shape(a, b, o, st);
  sy_code c = broadcast_shape(a, b, o, st, op_names[n->kind]);
  if (c == SY_OK && o->rank > EX_MAX_RANK) return fail(st, SY_UNSUPPORTED, "result rank %d", o->rank);
  return c;
}

/* strides of a broadcast operand aligned to the output's rank (0 where broadcast) */
static void bstrides(const ex_val *x, int r, int64_t *s) {
  int64_t acc = 1;
  for (int d = r - 1; d >= 0; d--) {
    int ix = d - (r - x->rank);
    int64_t dim = ix >= 0 ? x->shape[ix] : 1;
    s[d] = dim == 1 ? 0 : acc;
    acc *= dim;
  }
}

static void binary(op_kind k, const ex_val *a, const ex_val *b, ex_val *o) {
  int r = o->rank;
  int64_t n = numel(o);
  if (n == 0) return;
  int64_t sa[EX_MAX_RANK], sb[EX_MAX_RANK], idx[EX_MAX_RANK] = {0};
  bstrides(a, r, sa);
  bstrides(b, r, sb);
  const float *pa = a->data, *pb = b->data;
  float *po = o->data;
  int64_t ia = 0, ib = 0;
  int64_t inner = r > 0 ? o->shape[r - 1] : 1;
  int64_t ia_step = r > 0 ? sa[r - 1] : 0, ib_step = r > 0 ? sb[r - 1] : 0;
  for (int64_t i = 0; i < n; i += inner) {
    for (int64_t j = 0; j < inner; j++) {
      float x = pa[ia + j * ia_step], y = pb[ib + j * ib_step];
      float z;
      switch (k) {
        case OP_ADD: z = x + y; break;
        case OP_SUB: z = x - y; break;
        case OP_MUL: z = x * y; break;
        default: z = x / y; break;
      }
      po[i + j] = z;
    }
    /* advance the outer index (all dims but the last) */
    for (int d = r - 2; d >= 0; d--) {
      idx[d]++;
      ia += sa[d];
      ib += sb[d];
      if (idx[d] < o->shape[d]) break;
      ia -= sa[d] * o->shape[d];
      ib -= sb[d] * o->shape[d];
      idx[d] = 0;
    }
  }
}

static void relu(const ex_val *a, ex_val *o) {
  int64_t n = numel(o);
  for (int64_t i = 0; i < n; i++) {
    float x = a->data[i];
    o->data[i] = x > 0 ? x : (x != x ? x : 0.0f); /* NaN stays NaN */
  }
}

static void matmul(const ex_val *a, const ex_val *b, ex_val *o) {
  int64_t m = a->rank >= 2 ? a->shape[a->rank - 2] : 1;
  int64_t kk = a->shape[a->rank - 1];
  int64_t nn = b->rank >= 2 ? b->shape[b->rank - 1] : 1;
  /* batch: the output's leading dims, broadcast from a's and b's */
  int ob = o->rank - (a->rank >= 2) - (b->rank >= 2);
  ex_val ba = {0}, bb = {0}, bo = {0};
  ba.rank = a->rank > 2 ? a->rank - 2 : 0;
  bb.rank = b->rank > 2 ? b->rank - 2 : 0;
  memcpy(ba.shape, a->shape, ba.rank * sizeof(int64_t));
  memcpy(bb.shape, b->shape, bb.rank * sizeof(int64_t));
  bo.rank = ob;
  memcpy(bo.shape, o->shape, ob * sizeof(int64_t));
  int64_t sa[EX_MAX_RANK], sb[EX_MAX_RANK], idx[EX_MAX_RANK] = {0};
  bstrides(&ba, ob, sa);
  bstrides(&bb, ob, sb);
  int64_t batches = numel(&bo);
  int64_t ia = 0, ib = 0;
  for (int64_t t = 0; t < batches; t++) {
    const float *A = a->data + ia * m * kk;
    const float *B = b->data + ib * kk * nn;
    float *C = o->data + t * m * nn;
    for (int64_t i = 0; i < m; i++) {
      float *c = C + i * nn;
      for (int64_t j = 0; j < nn; j++) c[j] = 0;
      for (int64_t p = 0; p < kk; p++) {
        float x = A[i * kk + p];
        const float *brow = B + p * nn;
        for (int64_t j = 0; j < nn; j++) c[j] += x * brow[j];
      }
    }
    for (int d = ob - 1; d >= 0; d--) {
      idx[d]++;
      ia += sa[d];
      ib += sb[d];
      if (idx[d] < bo.shape[d]) break;
      ia -= sa[d] * bo.shape[d];
      ib -= sb[d] * bo.shape[d];
      idx[d] = 0;
    }
  }
}

/* float32 -> float16 -> float32, round to nearest even (overflow to inf) */
static float round_f16(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  uint32_t sign = u & 0x80000000u, abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) return x; /* inf, NaN */
  float a;
  memcpy(&a, &abs, 4);
  float r;
  if (a >= 65520.0f) {
    r = 1.0f / 0.0f;
  } else if (a < 6.103515625e-05f) { /* subnormal half: multiples of 2^-24 (exact in float) */
    const float q = 5.9604644775390625e-08f; /* 2^-24 */
    float n = a / q;
    int64_t fl = (int64_t)n;
    float rem = n - (float)fl;
    if (rem > 0.5f || (rem == 0.5f && (fl & 1))) fl++;
    r = (float)fl * q;
  } else { /* keep 10 of 23 mantissa bits */
    uint32_t lsb = (abs >> 13) & 1u;
    uint32_t rr = (abs + 0x0fffu + lsb) & ~0x1fffu;
    memcpy(&r, &rr, 4);
  }
  uint32_t ru;
  memcpy(&ru, &r, 4);
  ru |= sign;
  memcpy(&r, &ru, 4);
  return r;
}

/* float32 -> bfloat16 -> float32, round to nearest even */
static float round_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return x; /* NaN */
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  float r;
  memcpy(&r, &u, 4);
  return r;
}

static void reduce_precision(int32_t precision, ex_val *o) {
  if (precision == SY_PRECISION_FLOAT32) return;
  int64_t n = numel(o);
  for (int64_t i = 0; i < n; i++) o->data[i] = precision == SY_PRECISION_FLOAT16 ? round_f16(o->data[i]) : round_bf16(o->data[i]);
}

/* bind inputs and constants, then propagate shapes through the nodes */
static sy_code plan(const ex_exec *e, const sy_execute_call *call, ex_val *vals, sy_status *st) {
  if (call->num_inputs != e->num_inputs || call->num_outputs != e->num_outputs)
    return fail(st, SY_INVALID_ARGUMENT, "got %u inputs and %u outputs, the executable has %u and %u", call->num_inputs,
                call->num_outputs, e->num_inputs, e->num_outputs);
  for (uint32_t v = 0; v < e->num_values; v++) {
    vals[v].rank = e->const_rank[v];
    vals[v].data = e->const_data[v];
    vals[v].owned = 0;
    if (vals[v].rank >= 0) memcpy(vals[v].shape, e->const_shape[v], vals[v].rank * sizeof(int64_t));
  }
  for (uint32_t i = 0; i < e->num_inputs; i++) {
    const sy_tensor *t = &call->inputs[i];
    ex_val *v = &vals[e->inputs[i]];
    if (t->dtype != SY_DTYPE_FLOAT32) return fail(st, SY_INVALID_ARGUMENT, "input %u has dtype %d, want float32", i, t->dtype);
    if (t->rank < 0 || t->rank > EX_MAX_RANK) return fail(st, SY_UNSUPPORTED, "input %u has rank %d", i, t->rank);
    v->rank = t->rank;
    memcpy(v->shape, t->shape, t->rank * sizeof(int64_t));
    v->data = t->data;
  }
  for (uint32_t j = 0; j < e->num_nodes; j++) {
    sy_code c = node_shape(&e->nodes[j], vals, st);
    if (c) return c;
  }
  return SY_OK;
}

static sy_code ex_infer_outputs(void *p, const sy_execute_call *call, sy_status *st) {
  const ex_exec *e = p;
  ex_val *vals = calloc(e->num_values ? e->num_values : 1, sizeof *vals);
  if (!vals) return fail(st, SY_RESOURCE_EXHAUSTED, "out of memory");
  sy_code c = plan(e, call, vals, st);
  for (uint32_t i = 0; c == SY_OK && i < e->num_outputs; i++) {
    const ex_val *v = &vals[e->outputs[i]];
    sy_tensor *t = &call->outputs[i];
    t->dtype = SY_DTYPE_FLOAT32;
    t->rank = v->rank;
    memcpy(t->shape, v->shape, v->rank * sizeof(int64_t));
  }
  free(vals);
  return c;
}

/* inputs outside the compile-time shape bounds are declined */
static sy_code check_bounds(const ex_exec *e, const sy_execute_call *call, sy_status *st) {
  for (uint32_t i = 0; i < e->num_inputs; i++) {
    const ex_bound *b = &e->bounds[i];
    const sy_tensor *t = &call->inputs[i];
    if (b->rank < 0) continue;
    if (t->rank != b->rank)
      return fail(st, SY_UNSUPPORTED, "input %u has rank %d, the shape bounds given at compile have %d dims", i, t->rank, b->rank);
    for (int32_t d = 0; d < b->rank; d++)
      if (t->shape[d] < b->min[d] || t->shape[d] > b->max[d])
        return fail(st, SY_UNSUPPORTED, "input %u dim %d is %lld, outside the bounds [%lld, %lld] given at compile", i, d,
                    (long long)t->shape[d], (long long)b->min[d], (long long)b->max[d]);
  }
  return SY_OK;
}

/* runs the executable; records one kernel per node into prof when it is
 * not NULL (prof->kernels and prof->nodes have room for every node) */
static sy_code run(const ex_exec *e, const sy_execute_call *call, ex_profile *prof, sy_status *st) {
  ex_val *vals = calloc(e->num_values ? e->num_values : 1, sizeof *vals);
  if (!vals) return fail(st, SY_RESOURCE_EXHAUSTED, "out of memory");
  if (prof) {
    prof->device = e->device;
    prof->num_kernels = 0;
    prof->start_ns = now_ns();
  }
  sy_code c = plan(e, call, vals, st);
  if (c == SY_OK) c = check_bounds(e, call, st);
  /* outputs: host memory, written in place; their shape must match */
  for (uint32_t i = 0; c == SY_OK && i < e->num_outputs; i++) {
    ex_val *v = &vals[e->outputs[i]];
    const sy_tensor *t = &call->outputs[i];
    int same = t->dtype == SY_DTYPE_FLOAT32 && t->rank == v->rank;
    for (int d = 0; same && d < v->rank; d++) same = t->shape[d] == v->shape[d];
    if (!same) {
      c = fail(st, SY_INVALID_ARGUMENT, "output %u: the host allocated dtype %d rank %d, the result is float32 rank %d", i,
               t->dtype, t->rank, v->rank);
      break;
    }
    if (v->data != NULL) {
      /* an output that is also an input or constant: copy it */
      if (t->num_bytes) memcpy(t->data, v->data, t->num_bytes);
      continue;
    }
    v->data = t->data;
  }
  for (uint32_t j = 0; c == SY_OK && j < e->num_nodes; j++) {
    if (*call->cancelled) {
      c = fail(st, SY_CANCELLED, "cancelled before node %u of %u", j, e->num_nodes);
      break;
    }
    const ex_node *n = &e->nodes[j];
    ex_val *o = &vals[n->out];
    if (o->data == NULL) {
      int64_t bytes = numel(o) * (int64_t)sizeof(float);
      o->data = malloc(bytes ? (size_t)bytes : 1);
      if (!o->data) {
        c = fail(st, SY_RESOURCE_EXHAUSTED, "out of memory for a %lld-byte intermediate", (long long)bytes);
        break;
      }
      o->owned = 1;
    }
    int64_t t0 = prof ? now_ns() : 0;
    switch (n->kind) {
      case OP_RELU: relu(&vals[n->in[0]], o); break;
      case OP_MATMUL: matmul(&vals[n->in[0]], &vals[n->in[1]], o); break;
      default: binary(n->kind, &vals[n->in[0]], &vals[n->in[1]], o); break;
    }
    reduce_precision(e->precision, o);
    if (prof) {
      sy_kernel_timing *k = &prof->kernels[prof->num_kernels];
      memset(k, 0, sizeof *k);
      snprintf(k->name, SY_NAME_CAPACITY, "%s", kernel_names[n->kind]);
      k->start_ns = t0;
      k->end_ns = now_ns();
      k->first_node = prof->num_kernels;
      k->num_nodes = 1;
      prof->nodes[prof->num_kernels++] = n->node;
    }
  }
  if (prof) prof->end_ns = now_ns();
  for (uint32_t v = 0; v < e->num_values; v++)
    if (vals[v].owned) free(vals[v].data);
  free(vals);
  return c;
}

static void free_profile(ex_profile *p) {
  free(p->kernels);
  free(p->nodes);
  memset(p, 0, sizeof *p);
}

static sy_code alloc_profile(const ex_exec *e, ex_profile *p, sy_status *st) {
  memset(p, 0, sizeof *p);
  p->kernels = calloc(e->num_nodes ? e->num_nodes : 1, sizeof *p->kernels);
  p->nodes = calloc(e->num_nodes ? e->num_nodes : 1, sizeof *p->nodes);
  if (!p->kernels || !p->nodes) {
    free_profile(p);
    return fail(st, SY_RESOURCE_EXHAUSTED, "out of memory for a profile");
  }
  return SY_OK;
}

/* copies a recorded profile into the host's, within its capacities
 * (kernels past them are dropped, as the header allows) */
static void export_profile(const ex_profile *p, sy_call_profile *out) {
  uint32_t n = p->num_kernels;
  if (n > out->kernel_capacity) n = out->kernel_capacity;
  if (n > out->node_capacity) n = out->node_capacity;
  for (uint32_t k = 0; k < n; k++) {
    out->kernels[k] = p->kernels[k];
    out->kernels[k].first_node = k;
    out->kernels[k].num_nodes = 1;
    out->node_refs[k] = p->nodes[k];
  }
  out->num_kernels = n;
  out->num_node_refs = n;
  out->device = p->device;
  out->start_ns = p->start_ns;
  out->end_ns = p->end_ns;
  snprintf(out->queue, SY_NAME_CAPACITY, "example-cpu%d/host", p->device);
}

/* whether the host asked for this call's profile */
static sy_call_profile *wanted_profile(const sy_execute_call *call) {
#ifdef SY_EXAMPLE_HAL_1_0
  (void)call;
  return NULL;
#else
  if (!SY_HAS_FIELD(call, sy_execute_call, profile) || !call->profile) return NULL;
  sy_call_profile *p = call->profile;
  if (!SY_HAS_FIELD(p, sy_call_profile, node_refs) || !p->kernels || !p->node_refs) return NULL;
  return p;
#endif
}

static sy_code ex_execute(void *p, const sy_execute_call *call, sy_status *st) {
  const ex_exec *e = p;
#ifdef SY_EXAMPLE_HAL_1_0
  if (call->struct_size != SY_EXECUTE_CALL_SIZE_1_0)
    return fail(st, SY_INTERNAL, "a HAL 1.0 delegate was given a %u-byte sy_execute_call", call->struct_size);
#endif
  sy_call_profile *want = wanted_profile(call);
  if (!want) return run(e, call, NULL, st);
  ex_profile prof;
  sy_code c = alloc_profile(e, &prof, st);
  if (c) return c;
  c = run(e, call, &prof, st);
  if (c == SY_OK) export_profile(&prof, want);
  free_profile(&prof);
  return c;
}

/* ------------------------------------------------------------- HAL 1.1 */
#ifndef SY_EXAMPLE_HAL_1_0

/* The example's "device" is host memory it owns; its work is synchronous,
 * so every fence it returns has already signalled. A real accelerator
 * would queue the work and signal the fence from its completion path. */

#define EX_MAX_HANDLES (1u << 20)
#define EX_MAX_BUFFER_BYTES ((uint64_t)1 << 32)

static ex_buffer *find_buffer(example_delegate *d, sy_buffer id) {
  if (id == 0) return NULL;
  for (size_t i = 0; i < d->num_bufs; i++)
    if (d->bufs[i].id == id) return &d->bufs[i];
  return NULL;
}

static ex_fence *find_fence(example_delegate *d, sy_fence id) {
  if (id == 0) return NULL;
  for (size_t i = 0; i < d->num_fences; i++)
    if (d->fences[i].id == id) return &d->fences[i];
  return NULL;
}

/* a free slot of a table of n entries of size sz, growing it; NULL when full */
static void *slot(void **table, size_t *n, size_t sz) {
  char *t = *table;
  for (size_t i = 0; i < *n; i++)
    if (*(uint64_t *)(t + i * sz) == 0) return t + i * sz;
  if (*n >= EX_MAX_HANDLES) return NULL;
  size_t grow = *n ? *n * 2 : 16;
  char *nt = realloc(t, grow * sz);
  if (!nt) return NULL;
  memset(nt + *n * sz, 0, (grow - *n) * sz);
  *table = nt;
  char *s = nt + *n * sz;
  *n = grow;
  return s;
}

/* every after-fence must be one of ours; the example's have all signalled */
static sy_code check_after(example_delegate *d, const sy_fence *after, uint32_t n, sy_status *st) {
  if (n > 0 && after == NULL) return fail(st, SY_INVALID_ARGUMENT, "%u fences to wait for at NULL", n);
  for (uint32_t i = 0; i < n; i++)
    if (!find_fence(d, after[i])) return fail(st, SY_INVALID_ARGUMENT, "fence %llu is not live in this delegate", (unsigned long long)after[i]);
  return SY_OK;
}

/* records a signalled fence with the work's result; called with d->mu held */
static sy_code signalled(example_delegate *d, sy_code result, const sy_status *work, sy_fence *out, sy_status *st) {
  ex_fence *f = slot((void **)&d->fences, &d->num_fences, sizeof *f);
  if (!f) return fail(st, SY_RESOURCE_EXHAUSTED, "too many live fences");
  f->id = ++d->next_id;
  f->result = result;
  f->message[0] = 0;
  if (result != SY_OK && work) memcpy(f->message, work->message, SY_MESSAGE_CAPACITY);
  *out = f->id;
  return SY_OK;
}

static sy_code ex_allocate(void *self, const sy_buffer_request *req, sy_buffer *out, sy_status *st) {
  example_delegate *d = self;
  if (!req || !out) return fail(st, SY_INVALID_ARGUMENT, "allocate: NULL request or result");
  if (req->dtype != SY_DTYPE_FLOAT32) return fail(st, SY_UNSUPPORTED, "the example's buffers hold float32, not dtype %d", req->dtype);
  if (req->memory != SY_MEMORY_HOST && req->memory != SY_MEMORY_DEVICE_LOCAL)
    return fail(st, SY_UNSUPPORTED, "the example has no memory of kind %d", req->memory);
  if (req->device < 0 || req->device >= SY_EXAMPLE_DEVICES)
    return fail(st, SY_INVALID_ARGUMENT, "device %d (the example has %d)", req->device, SY_EXAMPLE_DEVICES);
  if (req->rank < 0 || req->rank > EX_MAX_RANK || (req->rank > 0 && !req->shape))
    return fail(st, SY_UNSUPPORTED, "rank %d (the example takes 0..%d)", req->rank, EX_MAX_RANK);
  uint64_t n = 1;
  for (int32_t i = 0; i < req->rank; i++) {
    if (req->shape[i] < 0) return fail(st, SY_INVALID_ARGUMENT, "dim %d is %lld", i, (long long)req->shape[i]);
    if (req->shape[i] > 0 && n > EX_MAX_BUFFER_BYTES / sizeof(float) / (uint64_t)req->shape[i])
      return fail(st, SY_RESOURCE_EXHAUSTED, "a buffer over %llu bytes", (unsigned long long)EX_MAX_BUFFER_BYTES);
    n *= (uint64_t)req->shape[i];
  }
  float *data = malloc(n ? n * sizeof(float) : 1);
  if (!data) return fail(st, SY_RESOURCE_EXHAUSTED, "out of memory for %llu bytes", (unsigned long long)(n * sizeof(float)));
  pthread_mutex_lock(&d->mu);
  ex_buffer *b = slot((void **)&d->bufs, &d->num_bufs, sizeof *b);
  if (!b) {
    pthread_mutex_unlock(&d->mu);
    free(data);
    return fail(st, SY_RESOURCE_EXHAUSTED, "too many live buffers");
  }
  b->id = ++d->next_id;
  b->device = req->device;
  b->rank = req->rank;
  if (req->rank > 0) memcpy(b->shape, req->shape, (size_t)req->rank * sizeof(int64_t));
  b->data = data;
  b->num_bytes = n * sizeof(float);
  *out = b->id;
  pthread_mutex_unlock(&d->mu);
  return SY_OK;
}

static sy_code ex_free_buffer(void *self, sy_buffer id, sy_status *st) {
  example_delegate *d = self;
  pthread_mutex_lock(&d->mu);
  ex_buffer *b = find_buffer(d, id);
  if (!b) {
    pthread_mutex_unlock(&d->mu);
    return fail(st, SY_INVALID_ARGUMENT, "buffer %llu is not live in this delegate", (unsigned long long)id);
  }
  free(b->data); /* no work is pending: the example's work is synchronous */
  memset(b, 0, sizeof *b);
  pthread_mutex_unlock(&d->mu);
  return SY_OK;
}

/* t must describe exactly b's float32 bytes */
static sy_code fits(const ex_buffer *b, const sy_tensor *t, const char *what, sy_status *st) {
  int same = t && t->dtype == SY_DTYPE_FLOAT32 && t->rank == b->rank && t->num_bytes == b->num_bytes && (t->data || !b->num_bytes);
  for (int32_t i = 0; same && i < b->rank; i++) same = t->shape[i] == b->shape[i];
  if (!same) return fail(st, SY_INVALID_ARGUMENT, "%s tensor does not match the buffer (float32, rank %d, %llu bytes)", what, b->rank, (unsigned long long)b->num_bytes);
  return SY_OK;
}

static sy_code ex_upload(void *self, sy_buffer dst, const sy_tensor *src, const sy_fence *after, uint32_t num_after, sy_fence *fence,
                         sy_status *st) {
  example_delegate *d = self;
  pthread_mutex_lock(&d->mu);
  ex_buffer *b = find_buffer(d, dst);
  sy_code c = b ? check_after(d, after, num_after, st) : fail(st, SY_INVALID_ARGUMENT, "buffer %llu is not live in this delegate", (unsigned long long)dst);
  if (c == SY_OK) c = fits(b, src, "upload: source", st);
  if (c == SY_OK) {
    if (b->num_bytes) memcpy(b->data, src->data, b->num_bytes);
    c = signalled(d, SY_OK, NULL, fence, st);
  }
  pthread_mutex_unlock(&d->mu);
  return c;
}

static sy_code ex_download(void *self, const sy_tensor *dst, sy_buffer src, const sy_fence *after, uint32_t num_after, sy_fence *fence,
                           sy_status *st) {
  example_delegate *d = self;
  pthread_mutex_lock(&d->mu);
  ex_buffer *b = find_buffer(d, src);
  sy_code c = b ? check_after(d, after, num_after, st) : fail(st, SY_INVALID_ARGUMENT, "buffer %llu is not live in this delegate", (unsigned long long)src);
  if (c == SY_OK) c = fits(b, dst, "download: destination", st);
  if (c == SY_OK) {
    if (b->num_bytes) memcpy(dst->data, b->data, b->num_bytes);
    c = signalled(d, SY_OK, NULL, fence, st);
  }
  pthread_mutex_unlock(&d->mu);
  return c;
}

static sy_code enqueue(void *self, void *exe, const sy_buffer *inputs, uint32_t num_inputs, const sy_buffer *outputs,
                       uint32_t num_outputs, const sy_fence *after, uint32_t num_after, uint32_t flags, sy_fence *fence, sy_status *st) {
  example_delegate *d = self;
  const ex_exec *e = exe;
  if ((num_inputs && !inputs) || (num_outputs && !outputs)) return fail(st, SY_INVALID_ARGUMENT, "enqueue: NULL buffer list");
  if (num_inputs > 64 || num_outputs > 64) return fail(st, SY_UNSUPPORTED, "enqueue: %u inputs, %u outputs (64 each at most)", num_inputs, num_outputs);
  sy_tensor ins[64], outs[64];
  int32_t zero = 0;
  pthread_mutex_lock(&d->mu);
  sy_code c = check_after(d, after, num_after, st);
  for (uint32_t i = 0; c == SY_OK && i < num_inputs + num_outputs; i++) {
    sy_buffer h = i < num_inputs ? inputs[i] : outputs[i - num_inputs];
    ex_buffer *b = find_buffer(d, h);
    if (!b) {
      c = fail(st, SY_INVALID_ARGUMENT, "%s %u: buffer %llu is not live in this delegate", i < num_inputs ? "input" : "output",
               i < num_inputs ? i : i - num_inputs, (unsigned long long)h);
      break;
    }
    if (b->device != e->device) {
      c = fail(st, SY_INVALID_ARGUMENT, "%s %u: buffer %llu is on device %d, the executable on device %d", i < num_inputs ? "input" : "output",
               i < num_inputs ? i : i - num_inputs, (unsigned long long)h, b->device, e->device);
      break;
    }
    sy_tensor *t = i < num_inputs ? &ins[i] : &outs[i - num_inputs];
    *t = (sy_tensor){SY_DTYPE_FLOAT32, b->rank, b->shape, b->data, b->num_bytes};
  }
  ex_profile prof = {0};
  int profiled = (flags & SY_ENQUEUE_PROFILE) != 0;
  if (c == SY_OK && profiled) c = alloc_profile(e, &prof, st);
  sy_execute_call call = {sizeof call, num_inputs, num_outputs, 0, ins, outs, &zero, NULL};
  /* a decline is enqueue's answer, not the work's: the host then runs the
   * subgraph elsewhere */
  if (c == SY_OK && num_inputs != e->num_inputs)
    c = fail(st, SY_INVALID_ARGUMENT, "enqueue: %u inputs, the executable has %u", num_inputs, e->num_inputs);
  if (c == SY_OK) c = check_bounds(e, &call, st);
  if (c == SY_OK) {
    sy_status work = {0};
    sy_code r = run(e, &call, profiled ? &prof : NULL, &work);
    c = signalled(d, r, &work, fence, st);
    if (c == SY_OK && profiled) {
      ex_fence *f = find_fence(d, *fence);
      f->profiled = 1;
      f->prof = prof; /* the fence owns it now */
      memset(&prof, 0, sizeof prof);
    }
#ifdef SY_EXAMPLE_FENCES_NEVER_SIGNAL
    if (c == SY_OK) find_fence(d, *fence)->pending = 1;
#endif
  }
  free_profile(&prof);
  pthread_mutex_unlock(&d->mu);
  return c;
}

static sy_code ex_enqueue(void *self, void *exe, const sy_buffer *inputs, uint32_t num_inputs, const sy_buffer *outputs,
                          uint32_t num_outputs, const sy_fence *after, uint32_t num_after, sy_fence *fence, sy_status *st) {
  return enqueue(self, exe, inputs, num_inputs, outputs, num_outputs, after, num_after, 0, fence, st);
}

#ifndef SY_EXAMPLE_TABLE_1_1_DEVMEM
static sy_code ex_enqueue_with_options(void *self, void *exe, const sy_buffer *inputs, uint32_t num_inputs, const sy_buffer *outputs,
                                       uint32_t num_outputs, const sy_fence *after, uint32_t num_after, const sy_enqueue_options *options,
                                       sy_fence *fence, sy_status *st) {
  uint32_t flags = options && SY_HAS_FIELD(options, sy_enqueue_options, flags) ? options->flags : 0;
  return enqueue(self, exe, inputs, num_inputs, outputs, num_outputs, after, num_after, flags, fence, st);
}

static sy_code ex_fence_profile(void *self, sy_fence id, sy_call_profile *out, sy_status *st) {
  example_delegate *d = self;
  if (!out || !SY_HAS_FIELD(out, sy_call_profile, node_refs) || !out->kernels || !out->node_refs)
    return fail(st, SY_INVALID_ARGUMENT, "fence_profile: no room for the profile");
  pthread_mutex_lock(&d->mu);
  ex_fence *f = find_fence(d, id);
  sy_code c = SY_OK;
  if (!f)
    c = fail(st, SY_INVALID_ARGUMENT, "fence %llu is not live in this delegate", (unsigned long long)id);
  else if (f->pending)
    c = fail(st, SY_FAILED_PRECONDITION, "fence %llu has not signalled", (unsigned long long)id);
  else if (!f->profiled)
    c = fail(st, SY_UNSUPPORTED, "fence %llu is of a call enqueued without SY_ENQUEUE_PROFILE", (unsigned long long)id);
  else
    export_profile(&f->prof, out);
  pthread_mutex_unlock(&d->mu);
  return c;
}
#endif

static sy_code ex_wait_fence(void *self, sy_fence id, int64_t timeout_ns, int32_t *done, sy_status *st) {
  example_delegate *d = self;
  *done = 0;
  pthread_mutex_lock(&d->mu);
  ex_fence *f = find_fence(d, id);
  sy_code c;
  if (f && f->pending) {
    pthread_mutex_unlock(&d->mu);
    if (timeout_ns > 0) {
      struct timespec ts = {(time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000)};
      nanosleep(&ts, NULL);
    }
    return SY_OK; /* not signalled */
  }
  if (!f) {
    c = fail(st, SY_INVALID_ARGUMENT, "fence %llu is not live in this delegate", (unsigned long long)id);
  } else {
    *done = 1;
    c = f->result;
    if (c != SY_OK) fail(st, c, "%s", f->message);
  }
  pthread_mutex_unlock(&d->mu);
  return c;
}

static void ex_release_fence(void *self, sy_fence id) {
  example_delegate *d = self;
  pthread_mutex_lock(&d->mu);
  ex_fence *f = find_fence(d, id);
  if (f) {
    free_profile(&f->prof);
    memset(f, 0, sizeof *f);
  }
  pthread_mutex_unlock(&d->mu);
}
#endif /* SY_EXAMPLE_HAL_1_0 */

static void ex_close(void *self) {
  example_delegate *d = self;
  for (size_t i = 0; i < d->num_bufs; i++)
    if (d->bufs[i].id) free(d->bufs[i].data);
  free(d->bufs);
#ifndef SY_EXAMPLE_HAL_1_0
  for (size_t i = 0; i < d->num_fences; i++)
    if (d->fences[i].id) free_profile(&d->fences[i].prof);
#endif
  free(d->fences);
  pthread_mutex_destroy(&d->mu);
  free(d);
}

SY_EXPORT sy_code switchyard_delegate_open(uint32_t host_major, uint32_t host_minor, sy_delegate_table *table,
                                           uint32_t capacity, sy_status *status) {
  (void)host_minor;
  if (host_major != SY_HAL_VERSION_MAJOR)
    return fail(status, SY_FAILED_PRECONDITION, "example delegate speaks HAL %d.x, host speaks %u.%u", SY_HAL_VERSION_MAJOR,
                host_major, host_minor);
  example_delegate *self = calloc(1, sizeof *self);
  if (!self) return fail(status, SY_RESOURCE_EXHAUSTED, "out of memory");
  if (pthread_mutex_init(&self->mu, NULL) != 0) {
    free(self);
    return fail(status, SY_RESOURCE_EXHAUSTED, "cannot make a mutex");
  }
  sy_delegate_table t = {0};
#ifdef SY_EXAMPLE_HAL_1_0
  /* built as a HAL 1.0 delegate (the host's compatibility tests): the
   * table ends at close, as a library built against the 1.0 header */
  const uint32_t size = (uint32_t)SY_DELEGATE_TABLE_SIZE_1_0;
  t.hal_max.minor = 0;
#else
#ifdef SY_EXAMPLE_TABLE_1_1_DEVMEM
  const uint32_t size = (uint32_t)SY_DELEGATE_TABLE_SIZE_1_1;
#else
  const uint32_t size = (uint32_t)sizeof t;
#endif
  t.hal_max.minor = SY_HAL_VERSION_MINOR;
  t.allocate = ex_allocate;
  t.free_buffer = ex_free_buffer;
  t.upload = ex_upload;
  t.download = ex_download;
  t.enqueue = ex_enqueue;
  t.wait_fence = ex_wait_fence;
  t.release_fence = ex_release_fence;
#ifndef SY_EXAMPLE_TABLE_1_1_DEVMEM
  t.enqueue_with_options = ex_enqueue_with_options;
  t.fence_profile = ex_fence_profile;
#endif
#endif
  t.struct_size = size;
  t.hal_min.major = 1;
  t.hal_min.minor = 0;
  t.hal_max.major = SY_HAL_VERSION_MAJOR;
  t.self = self;
  t.get_info = ex_get_info;
  t.get_capabilities = ex_get_capabilities;
  t.supports = ex_supports;
  t.compile = ex_compile;
  t.infer_outputs = ex_infer_outputs;
  t.execute = ex_execute;
  t.release = ex_release;
  t.close = ex_close;
  memcpy(table, &t, capacity < size ? capacity : size);
  table->struct_size = size; /* struct_size is first, always within capacity */
  return SY_OK;
}
