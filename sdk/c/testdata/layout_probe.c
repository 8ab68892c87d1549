/* layout_probe.c — reports sizeof/offsetof of the ABI structs so the Go
 * loader's test can compare them with its mirrors. */
#include <stddef.h>
#include "switchyard_delegate.h"

#define F(T, f) offsetof(T, f)

SY_EXPORT int32_t sy_layout(int64_t *out, int32_t cap) {
  int64_t v[] = {
      sizeof(sy_status),        F(sy_status, message),
      sizeof(sy_tensor),        F(sy_tensor, shape),          F(sy_tensor, data),       F(sy_tensor, num_bytes),
      sizeof(sy_value),         F(sy_value, dims),            F(sy_value, is_tensor),   F(sy_value, constant),
      sizeof(sy_attribute),     F(sy_attribute, f),           F(sy_attribute, i),       F(sy_attribute, s_len),
      F(sy_attribute, count),   F(sy_attribute, tensors),
      sizeof(sy_node),          F(sy_node, num_inputs),       F(sy_node, inputs),       F(sy_node, num_attributes),
      F(sy_node, attributes),
      sizeof(sy_opset),         F(sy_opset, version),
      sizeof(sy_subgraph),      F(sy_subgraph, name),         F(sy_subgraph, values),   F(sy_subgraph, topo_order),
      F(sy_subgraph, num_inputs), F(sy_subgraph, inputs),     F(sy_subgraph, num_constants), F(sy_subgraph, constants),
      F(sy_subgraph, opsets),
      sizeof(sy_verdict),       F(sy_verdict, reason),
      sizeof(sy_info),          F(sy_info, name),             F(sy_info, description),  F(sy_info, flags),
      sizeof(sy_op_capability), F(sy_op_capability, min_opset), F(sy_op_capability, dtypes), F(sy_op_capability, max_rank),
      sizeof(sy_capabilities),  F(sy_capabilities, ops),      F(sy_capabilities, num_layouts), F(sy_capabilities, max_tensor_bytes),
      F(sy_capabilities, control_flow),
      sizeof(sy_compile_options), F(sy_compile_options, profile),
      sizeof(sy_execute_call),  F(sy_execute_call, inputs),   F(sy_execute_call, cancelled),
      sizeof(sy_delegate_table), F(sy_delegate_table, hal_min), F(sy_delegate_table, self), F(sy_delegate_table, get_info),
      F(sy_delegate_table, execute), F(sy_delegate_table, close), SY_DELEGATE_TABLE_SIZE_1_0,
      SY_HAL_VERSION_MAJOR, SY_HAL_VERSION_MINOR, SY_MESSAGE_CAPACITY, SY_REASON_CAPACITY, SY_MAX_RANK,
      /* HAL 1.1 */
      sizeof(sy_buffer_request), F(sy_buffer_request, memory), F(sy_buffer_request, shape),
      F(sy_delegate_table, allocate), F(sy_delegate_table, enqueue), F(sy_delegate_table, release_fence),
      SY_DELEGATE_TABLE_SIZE_1_1, sizeof(sy_buffer), sizeof(sy_fence),
      SY_MEMORY_HOST, SY_MEMORY_HOST_VISIBLE, SY_MEMORY_DEVICE_LOCAL,
      /* HAL 1.1: devices, compile options, profiles */
      sizeof(sy_capabilities), F(sy_capabilities, num_devices), F(sy_capabilities, device_desc_size), F(sy_capabilities, devices),
      sizeof(sy_device_desc), F(sy_device_desc, memory_kinds), F(sy_device_desc, name), F(sy_device_desc, memory_bytes),
      F(sy_device_desc, max_buffer_bytes), F(sy_device_desc, precisions), F(sy_device_desc, cache_vendor), F(sy_device_desc, cache_driver),
      sizeof(sy_dim_range), sizeof(sy_shape_bound), F(sy_shape_bound, rank), F(sy_shape_bound, dims),
      sizeof(sy_compile_report), F(sy_compile_report, precision),
      sizeof(sy_compile_options), F(sy_compile_options, device), F(sy_compile_options, precision), F(sy_compile_options, num_shape_bounds),
      F(sy_compile_options, shape_bounds), F(sy_compile_options, report),
      sizeof(sy_kernel_timing), F(sy_kernel_timing, start_ns), F(sy_kernel_timing, end_ns), F(sy_kernel_timing, first_node), F(sy_kernel_timing, num_nodes),
      sizeof(sy_call_profile), F(sy_call_profile, kernel_capacity), F(sy_call_profile, num_node_refs), F(sy_call_profile, device),
      F(sy_call_profile, start_ns), F(sy_call_profile, end_ns), F(sy_call_profile, queue), F(sy_call_profile, kernels), F(sy_call_profile, node_refs),
      sizeof(sy_enqueue_options), F(sy_enqueue_options, flags),
      sizeof(sy_execute_call), F(sy_execute_call, profile),
      F(sy_delegate_table, enqueue_with_options), F(sy_delegate_table, fence_profile), SY_DELEGATE_TABLE_SIZE_1_1_PROFILING,
      SY_CAPABILITIES_SIZE_1_0, SY_COMPILE_OPTIONS_SIZE_1_0, SY_EXECUTE_CALL_SIZE_1_0,
      SY_NAME_CAPACITY, SY_MAX_DEVICES, SY_DECLINED, SY_INFO_CALL_PROFILES, SY_ENQUEUE_PROFILE,
      SY_PRECISION_FLOAT32, SY_PRECISION_FLOAT16, SY_PRECISION_BFLOAT16,
  };
  int32_t n = (int32_t)(sizeof v / sizeof v[0]);
  for (int32_t i = 0; i < n && i < cap; i++) out[i] = v[i];
  return n;
}
