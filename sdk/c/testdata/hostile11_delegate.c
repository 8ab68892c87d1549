/*
 * hostile11_delegate.c — a HAL 1.1 Relu delegate that returns malformed
 * HAL 1.1 data, as $SWITCHYARD_TEST_HOSTILE says (read at every call, the
 * table modes at open). The host must refuse each with a clear error and
 * never crash or read out of bounds:
 *
 *   devices_count      num_devices = 1000 (over SY_MAX_DEVICES)
 *   devices_null       two devices at NULL
 *   devices_stride     device_desc_size = 8 (smaller than sy_device_desc)
 *   devices_kind       a device of kind 77
 *   devices_bits       memory kinds with an unknown bit
 *   devices_size       memory_bytes = -1
 *   devices_buffer     largest buffer over the device's memory
 *   devices_name       a 300-byte name (no NUL within SY_NAME_CAPACITY)
 *   precision_unknown  compile reports precision 7
 *   precision_unasked  compile reports float16 though float32 was asked
 *   profile_kernels    num_kernels = kernel_capacity + 1
 *   profile_refs       num_node_refs = node_capacity + 1
 *   profile_node       a kernel naming node 99 of a 1-node subgraph
 *   profile_range      a kernel whose node range wraps around 2^32
 *   profile_time       a kernel that ends before it starts
 *   profile_device     a call on device 5 of 1
 *   decline            execute returns SY_DECLINED
 *   half_profiling     the table has enqueue_with_options, not fence_profile
 *   profiling_alone    the table has both, but no device memory
 *
 * Without the variable it is a well-behaved HAL 1.1 Relu delegate with one
 * device and per-call profiles.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "switchyard_delegate.h"

static int mode(const char *m) {
  const char *v = getenv("SWITCHYARD_TEST_HOSTILE");
  return v != NULL && strcmp(v, m) == 0;
}

static sy_code h_info(void *self, sy_info *info, sy_status *st) {
  (void)self;
  (void)st;
  info->device = SY_DEVICE_NPU;
  info->name = "hostile";
  info->vendor = "Switchyard tests";
  info->version = "1.1.0";
  info->description = "a HAL 1.1 delegate that lies";
  info->flags = SY_INFO_CALL_PROFILES;
  return SY_OK;
}

static const int32_t f32[] = {SY_DTYPE_FLOAT32};
static sy_op_capability ops[1];
static sy_device_desc devs[2];
static char long_name[300];

static sy_code h_caps(void *self, sy_capabilities *caps, sy_status *st) {
  (void)self;
  (void)st;
  ops[0].domain = "";
  ops[0].op_type = "Relu";
  ops[0].dtypes = f32;
  ops[0].num_dtypes = 1;
  caps->num_ops = 1;
  caps->ops = ops;
  if (!SY_HAS_FIELD(caps, sy_capabilities, devices)) return SY_OK;
  memset(devs, 0, sizeof devs);
  devs[0].kind = SY_DEVICE_NPU;
  devs[0].name = "npu0";
  devs[0].memory_bytes = 1 << 20;
  devs[0].memory_kinds = 1u << SY_MEMORY_DEVICE_LOCAL;
  devs[0].precisions = 1u << SY_PRECISION_FLOAT32;
  caps->num_devices = 1;
  caps->device_desc_size = sizeof(sy_device_desc);
  caps->devices = devs;
  if (mode("devices_count")) caps->num_devices = 1000;
  if (mode("devices_null")) {
    caps->num_devices = 2;
    caps->devices = NULL;
  }
  if (mode("devices_stride")) caps->device_desc_size = 8;
  if (mode("devices_kind")) devs[0].kind = 77;
  if (mode("devices_bits")) devs[0].memory_kinds |= 1u << 7;
  if (mode("devices_size")) devs[0].memory_bytes = -1;
  if (mode("devices_buffer")) devs[0].max_buffer_bytes = (int64_t)1 << 21;
  if (mode("devices_name")) {
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    devs[0].name = long_name;
  }
  return SY_OK;
}

static sy_code h_supports(void *self, const sy_subgraph *sg, sy_verdict *v, sy_status *st) {
  (void)self;
  (void)st;
  for (uint32_t i = 0; i < sg->num_nodes; i++) {
    v[i].supported = strcmp(sg->nodes[i].op_type, "Relu") == 0;
    if (!v[i].supported) snprintf(v[i].reason, SY_REASON_CAPACITY, "only Relu");
  }
  return SY_OK;
}

static int exe_token;

static sy_code h_compile(void *self, const sy_subgraph *sg, const sy_compile_options *o, void **exe, sy_status *st) {
  (void)self;
  (void)sg;
  (void)st;
  if (SY_HAS_FIELD(o, sy_compile_options, report)) {
    o->report->precision = o->precision;
    if (mode("precision_unknown")) o->report->precision = 7;
    if (mode("precision_unasked")) o->report->precision = SY_PRECISION_FLOAT16;
  }
  *exe = &exe_token;
  return SY_OK;
}

static sy_code h_infer(void *exe, const sy_execute_call *call, sy_status *st) {
  (void)exe;
  (void)st;
  for (uint32_t i = 0; i < call->num_outputs && i < call->num_inputs; i++) {
    call->outputs[i].dtype = call->inputs[i].dtype;
    call->outputs[i].rank = call->inputs[i].rank;
    memcpy(call->outputs[i].shape, call->inputs[i].shape, call->inputs[i].rank * sizeof(int64_t));
  }
  return SY_OK;
}

static sy_code h_execute(void *exe, const sy_execute_call *call, sy_status *st) {
  (void)exe;
  if (mode("decline")) {
    snprintf(st->message, SY_MESSAGE_CAPACITY, "not this shape");
    st->code = SY_DECLINED;
    return SY_DECLINED;
  }
  if (call->num_inputs != 1 || call->num_outputs != 1) {
    snprintf(st->message, SY_MESSAGE_CAPACITY, "one input, one output");
    return st->code = SY_INVALID_ARGUMENT;
  }
  const float *x = call->inputs[0].data;
  float *y = call->outputs[0].data;
  for (uint64_t i = 0; i < call->outputs[0].num_bytes / 4; i++) y[i] = x[i] > 0 ? x[i] : 0;
  sy_call_profile *p = SY_HAS_FIELD(call, sy_execute_call, profile) ? call->profile : NULL;
  if (p == NULL || p->kernel_capacity < 1 || p->node_capacity < 1) return SY_OK;
  p->num_kernels = 1;
  p->num_node_refs = 1;
  p->start_ns = 100;
  p->end_ns = 200;
  snprintf(p->queue, SY_NAME_CAPACITY, "q0");
  snprintf(p->kernels[0].name, SY_NAME_CAPACITY, "relu");
  p->kernels[0].start_ns = 110;
  p->kernels[0].end_ns = 190;
  p->kernels[0].first_node = 0;
  p->kernels[0].num_nodes = 1;
  p->node_refs[0] = 0;
  if (mode("profile_kernels")) p->num_kernels = p->kernel_capacity + 1;
  if (mode("profile_refs")) p->num_node_refs = p->node_capacity + 1;
  if (mode("profile_node")) p->node_refs[0] = 99;
  if (mode("profile_range")) {
    p->kernels[0].first_node = 0xffffffffu;
    p->kernels[0].num_nodes = 2;
  }
  if (mode("profile_time")) p->kernels[0].end_ns = 50;
  if (mode("profile_device")) p->device = 5;
  return SY_OK;
}

static void h_release(void *exe) { (void)exe; }
static void h_close(void *self) { (void)self; }

/* never called: the tables that carry them are refused */
static sy_code h_enqueue_with_options(void *self, void *executable, const sy_buffer *inputs, uint32_t num_inputs,
                                      const sy_buffer *outputs, uint32_t num_outputs, const sy_fence *after, uint32_t num_after,
                                      const sy_enqueue_options *options, sy_fence *fence, sy_status *status) {
  (void)self, (void)executable, (void)inputs, (void)num_inputs, (void)outputs, (void)num_outputs, (void)after, (void)num_after;
  (void)options, (void)fence;
  snprintf(status->message, SY_MESSAGE_CAPACITY, "never");
  return status->code = SY_INTERNAL;
}

static sy_code h_fence_profile(void *self, sy_fence fence, sy_call_profile *profile, sy_status *status) {
  (void)self, (void)fence, (void)profile;
  snprintf(status->message, SY_MESSAGE_CAPACITY, "never");
  return status->code = SY_INTERNAL;
}

SY_EXPORT sy_code switchyard_delegate_open(uint32_t host_major, uint32_t host_minor, sy_delegate_table *table, uint32_t capacity,
                                           sy_status *status) {
  (void)host_major;
  (void)host_minor;
  (void)status;
  sy_delegate_table t = {0};
  t.struct_size = sizeof t;
  t.hal_min.major = 1;
  t.hal_max.major = 1;
  t.hal_max.minor = 1;
  t.get_info = h_info;
  t.get_capabilities = h_caps;
  t.supports = h_supports;
  t.compile = h_compile;
  t.infer_outputs = h_infer;
  t.execute = h_execute;
  t.release = h_release;
  t.close = h_close;
  if (mode("half_profiling") || mode("profiling_alone")) t.enqueue_with_options = h_enqueue_with_options;
  if (mode("profiling_alone")) t.fence_profile = h_fence_profile;
  memcpy(table, &t, capacity < sizeof t ? capacity : sizeof t);
  table->struct_size = sizeof t;
  return SY_OK;
}
