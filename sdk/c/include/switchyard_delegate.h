/*
 * switchyard_delegate.h — the Switchyard C ABI for delegates (HAL 1.1).
 *
 * A delegate is a shared library that implements a Switchyard backend in C
 * (or anything that can export C functions). Switchyard opens it at run time
 * with dlopen(RTLD_NOW | RTLD_LOCAL) from pure Go (no cgo), looks up ONE
 * exported symbol, SY_ENTRY_POINT, and talks to the library only through the
 * table of function pointers that entry point fills in.
 *
 * The meaning is exactly the Go contract in hal/ (hal.Backend,
 * hal.Executable):
 *
 *   get_info          static description (name, vendor, version, device)
 *   get_capabilities  what the delegate can take, as data (a summary)
 *   supports          one verdict per node of a concrete subgraph, with a
 *                     reason for every declined node
 *   compile           a subgraph into an executable
 *   infer_outputs     output dtypes and shapes for concrete input shapes
 *   execute           run an executable on host-owned tensors (zero copy)
 *   release           free an executable
 *   close             free the delegate instance
 *
 * and, optional in HAL 1.1 (see the HAL 1.1 sections below): allocate,
 * free_buffer, upload, download, enqueue, wait_fence, release_fence
 * (device memory and fences), enqueue_with_options and fence_profile
 * (profiled enqueues); devices, compile options, per-call profiles and
 * run-time declines travel in the structs above.
 *
 * ------------------------------------------------------------------------
 * VERSIONING
 *
 *   The host calls SY_ENTRY_POINT with the HAL version it speaks
 *   (host_major, host_minor). The library fills the table, including
 *   hal_min/hal_max: the inclusive range of HAL versions it speaks. The host
 *   negotiates with hal.Negotiate: the version spoken is the highest one in
 *   [hal_min, hal_max] that the host speaks, which must have the host's major
 *   version. Both sides can compute it: min(host, hal_max) when it is in the
 *   range. A library that cannot serve the host at all may refuse by
 *   returning SY_FAILED_PRECONDITION with a message.
 *
 *   The table carries its own size (struct_size = sizeof the table as the
 *   library was built). Minor versions only APPEND members. The host passes
 *   the capacity of its table; the library copies min(capacity, its size)
 *   bytes and always reports its own size. A table smaller than
 *   SY_DELEGATE_TABLE_SIZE_1_0 is refused, and so is a table with a NULL
 *   required function. Structs the host passes in (sy_info, sy_capabilities,
 *   sy_subgraph, sy_compile_options, sy_execute_call, sy_call_profile) also
 *   start with struct_size so either side can tell how much of them the
 *   other knows.
 *
 *   Structs, too, only grow at the END, and the reader checks struct_size
 *   before it reads a member added later: SY_HAS_FIELD(p, type, member) says
 *   whether the side that set p->struct_size knows member. A library built
 *   against this header that is given a 1.0-sized sy_compile_options (an
 *   older host) MUST NOT read device, precision, shape_bounds or report; a
 *   host never reads members a library's struct_size (or, for what the
 *   library fills in host structs, its negotiated version) does not cover.
 *   The sizes each HAL version introduced are named SY_*_SIZE_1_0 below.
 *   Arrays the library returns carry their element size (stride) where
 *   their element may grow (sy_capabilities.device_desc_size).
 *
 * ------------------------------------------------------------------------
 * ERRORS
 *
 *   Every function that can fail returns an sy_code (the numbers are the
 *   HAL's stable codes: hal.Code in Go, the gRPC protocol, this header) and
 *   fills the host-owned sy_status with the same code and a NUL-terminated
 *   message. The message is the "last error" of THAT call: there is no
 *   global or thread-local last-error slot, because the host (Go) may run
 *   consecutive calls on different OS threads and many calls concurrently.
 *   The host zeroes the status before each call. SY_OK with a message is
 *   allowed and ignored. The application sees
 *   "hal: <name>: <op>: <code name>: <message>" and can test the code with
 *   errors.Is(err, hal.ErrResourceExhausted) and friends.
 *
 * ------------------------------------------------------------------------
 * OWNERSHIP (every pointer)
 *
 *   - sy_status, sy_info, sy_capabilities, sy_verdict arrays,
 *     sy_delegate_table: host memory; the library writes into them during
 *     the call only.
 *   - Strings and arrays the library returns through sy_info and
 *     sy_capabilities: library memory, valid until close(self). The host
 *     copies them.
 *   - sy_subgraph and everything it points to (names, nodes, values,
 *     attributes, constants' data): host memory, READ-ONLY, valid only during
 *     the supports/compile call. compile MUST copy whatever it keeps
 *     (constants included).
 *   - sy_execute_call and its tensors: host memory. Input data is READ-ONLY;
 *     output data is host-allocated and written in place by execute. Valid
 *     only during the call (zero copy: data points straight at the host
 *     tensors). execute MUST NOT keep any of these pointers.
 *   - self (from the table) and executables (from compile): library memory,
 *     freed by close and release. The host releases every executable before
 *     close, and never uses a released executable or a closed self.
 *
 * ------------------------------------------------------------------------
 * THREADS
 *
 *   get_info, get_capabilities, supports and compile may be called from any
 *   thread, concurrently. execute may be called concurrently on the same
 *   executable unless get_info sets SY_INFO_SERIAL_EXECUTE, in which case the
 *   host serialises execute (and infer_outputs) per executable. Calls must
 *   not depend on which OS thread they run on.
 *
 * ------------------------------------------------------------------------
 * DATA
 *
 *   dtypes use the ONNX TensorProto.DataType numbering (SY_DTYPE_*).
 *   Tensors are dense and row-major; shape holds rank int64 dims (rank 0 is a
 *   scalar with one element; a zero dim means no elements and data may be
 *   NULL). num_bytes = elements * element size. bool is one byte (0/1);
 *   float16/bfloat16 are their raw 16-bit patterns. String tensors never
 *   cross this ABI (data is NULL; decline such nodes).
 *
 *   A subgraph is a list of values (every named tensor it mentions: boundary
 *   inputs, constants, intermediates, outputs) and nodes that refer to
 *   values BY INDEX. Node i of the subgraph is node i of the host's graph:
 *   supports answers verdicts[i] for nodes[i]. topo_order lists node indices
 *   in an order where every value is produced before it is read. The dtype
 *   and shape of each value are what the host inferred (dtype 0 = unknown,
 *   rank -1 = unknown, dim -1 = unknown or symbolic); the shapes given at
 *   execute time are authoritative.
 *
 *   Graph-valued attributes (If/Loop/Scan bodies) are passed with their type
 *   (SY_ATTR_GRAPH/SY_ATTR_GRAPHS) and no payload: a delegate MUST decline
 *   such nodes in this version.
 *
 * ------------------------------------------------------------------------
 * HAL 1.1: DEVICE MEMORY AND FENCES (optional)
 *
 *   A delegate with memory of its own appends seven functions to its table
 *   (allocate ... release_fence) and sets hal_max to 1.1. They are all or
 *   none: a table that has some of them is refused; a 1.0 table (or one
 *   with all seven NULL) has no device memory, and the host answers every
 *   device-memory request itself with Unsupported, never calling the
 *   library for it.
 *
 *   Buffers and fences are OPAQUE HANDLES (sy_buffer, sy_fence: 64-bit
 *   values the library issues; 0 is never a valid handle). The host never
 *   dereferences them and never sees a buffer's memory: values move in and
 *   out only through upload and download. A handle the library did not
 *   issue, or has freed or released, MUST be refused with
 *   SY_INVALID_ARGUMENT (never dereferenced blindly).
 *
 *   Ordering: upload, download and enqueue run after every fence in
 *   after[0..num_after) has signalled and return a fence of their own that
 *   signals when their work is complete (a library whose work is
 *   synchronous returns a fence that has already signalled). They MUST NOT
 *   wait for device work themselves.
 *
 *   Ownership: upload has copied src's bytes when it returns (the host may
 *   reuse src at once). download writes dst's bytes (host memory the host
 *   keeps valid and unmoved) by the time its fence signals, and MUST NOT
 *   touch dst after that. The library keeps every buffer an operation uses
 *   alive until that operation's fence has signalled, even if free_buffer
 *   was called first. release_fence tells the library the host will never
 *   name the fence again; the host releases a download fence only after it
 *   has signalled. close(self) ends all work and frees every buffer and
 *   fence still alive.
 *
 * ------------------------------------------------------------------------
 * HAL 1.1: DEVICES, COMPILE OPTIONS, PROFILES, PRECISION, DECLINES
 *
 *   These need no device memory: any library that negotiates 1.1 may use
 *   them. The host reads none of them from a library that negotiated 1.0.
 *
 *   Devices: get_capabilities lists the devices the library drives in
 *   sy_capabilities.devices (num_devices entries of device_desc_size bytes
 *   each, library memory valid until close, like every string in them); 0
 *   devices means one device described by sy_info. Device i is index i:
 *   sy_compile_options.device, sy_buffer_request.device and
 *   sy_call_profile.device name devices by that index. The host refuses a
 *   malformed list (over SY_MAX_DEVICES, a NULL array, an unknown kind,
 *   memory kind or precision bit, a negative size, a string without a NUL
 *   within SY_NAME_CAPACITY bytes) with an error naming the value.
 *
 *   Compile options: device (an index the library listed; the host
 *   refuses others before calling compile), precision (the LOWEST
 *   precision the caller accepts for float32 values: SY_PRECISION_FLOAT32,
 *   the default, means no reduced precision) and shape bounds (per boundary
 *   input, by index into sy_subgraph.inputs, one [min, max] range per dim;
 *   static dims repeat their value). A library may plan memory for the
 *   bounds and decline larger (or smaller) shapes at run time. compile
 *   reports in *options->report the precision the executable actually
 *   computes float32 values in: FLOAT32, or exactly the precision asked for
 *   (anything else is refused by the host, and the executable released).
 *
 *   Run-time declines: execute and enqueue return SY_DECLINED (or, the
 *   same, SY_UNSUPPORTED) for inputs they will not take, e.g. a shape
 *   outside the compile-time bounds. The host then runs the subgraph
 *   elsewhere, visibly (hal.ErrDeclined). Under HAL 1.0 SY_UNSUPPORTED from
 *   execute is an ordinary failure.
 *
 *   Per-call profiles: a library that sets SY_INFO_CALL_PROFILES fills
 *   sy_execute_call.profile whenever the host sets it (non-NULL): device
 *   timestamps (ns, the device's clock) of the call and of each internal
 *   kernel, each kernel naming the subgraph nodes it computed by INDEX into
 *   sy_subgraph.nodes as compile saw them. The profile, its kernel array and
 *   its node-reference pool are host memory with capacities the host sets;
 *   a library with more kernels than kernel_capacity merges or drops the
 *   rest (the host refuses counts over capacity, node indices out of range,
 *   and end before start). An enqueued call is profiled when it is
 *   enqueued through enqueue_with_options with SY_ENQUEUE_PROFILE; once its
 *   fence has signalled, fence_profile fills a host sy_call_profile the
 *   same way. These two table entries come after release_fence (table size
 *   SY_DELEGATE_TABLE_SIZE_1_1_PROFILING), both or neither, and only with
 *   the seven device-memory functions.
 */
#ifndef SWITCHYARD_DELEGATE_H
#define SWITCHYARD_DELEGATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The HAL version this header describes. */
#define SY_HAL_VERSION_MAJOR 1
#define SY_HAL_VERSION_MINOR 1

/* The one exported symbol, of type sy_entry_point_fn. */
#define SY_ENTRY_POINT "switchyard_delegate_open"

#if defined(_WIN32)
#define SY_EXPORT __declspec(dllexport)
#else
#define SY_EXPORT __attribute__((visibility("default")))
#endif

/* Capacities of host-owned fixed buffers. */
#define SY_MESSAGE_CAPACITY 1024 /* sy_status.message, NUL included */
#define SY_REASON_CAPACITY 256   /* sy_verdict.reason, NUL included */
#define SY_MAX_RANK 32           /* shape buffer of infer_outputs' outputs */
#define SY_NAME_CAPACITY 128     /* HAL 1.1: sy_kernel_timing.name, sy_call_profile.queue, device strings */
#define SY_MAX_DEVICES 64        /* HAL 1.1: sy_capabilities.num_devices at most */

/* Whether the side that set p->struct_size knows member (structs only grow
 * at the end). */
#define SY_HAS_FIELD(p, type, member) ((p)->struct_size >= offsetof(type, member) + sizeof(((type *)0)->member))

/* Stable error codes (hal.Code). */
typedef int32_t sy_code;
#define SY_OK 0
#define SY_UNAVAILABLE 1         /* library, device or process missing or gone */
#define SY_UNSUPPORTED 2         /* valid request the delegate does not implement */
#define SY_INVALID_ARGUMENT 3    /* bad graph, shapes, tensors or options */
#define SY_RESOURCE_EXHAUSTED 4  /* out of memory, handles, queue space */
#define SY_DEADLINE_EXCEEDED 5   /* the host's deadline passed */
#define SY_CANCELLED 6           /* the host cancelled (see sy_execute_call.cancelled) */
#define SY_INTERNAL 7            /* a bug in the delegate */
#define SY_FAILED_PRECONDITION 8 /* wrong state, incompatible version */
#define SY_DECLINED 9            /* HAL 1.1: execute/enqueue will not take these inputs (run elsewhere) */

/* Element types (ONNX TensorProto.DataType). */
#define SY_DTYPE_UNDEFINED 0
#define SY_DTYPE_FLOAT32 1
#define SY_DTYPE_UINT8 2
#define SY_DTYPE_INT8 3
#define SY_DTYPE_UINT16 4
#define SY_DTYPE_INT16 5
#define SY_DTYPE_INT32 6
#define SY_DTYPE_INT64 7
#define SY_DTYPE_STRING 8
#define SY_DTYPE_BOOL 9
#define SY_DTYPE_FLOAT16 10
#define SY_DTYPE_FLOAT64 11
#define SY_DTYPE_UINT32 12
#define SY_DTYPE_UINT64 13
#define SY_DTYPE_BFLOAT16 16

/* Attribute types (ONNX AttributeProto.AttributeType). */
#define SY_ATTR_FLOAT 1
#define SY_ATTR_INT 2
#define SY_ATTR_STRING 3
#define SY_ATTR_TENSOR 4
#define SY_ATTR_GRAPH 5 /* no payload in HAL 1.0 */
#define SY_ATTR_FLOATS 6
#define SY_ATTR_INTS 7
#define SY_ATTR_STRINGS 8
#define SY_ATTR_TENSORS 9
#define SY_ATTR_GRAPHS 10 /* no payload in HAL 1.0 */

/* Device kinds (hal.DeviceKind). */
#define SY_DEVICE_CPU 0
#define SY_DEVICE_GPU 1
#define SY_DEVICE_NPU 2
#define SY_DEVICE_DSP 3
#define SY_DEVICE_SIMULATED 4

/* Memory kinds (hal.MemoryKind). */
#define SY_MEMORY_HOST 0
#define SY_MEMORY_HOST_VISIBLE 1
#define SY_MEMORY_DEVICE_LOCAL 2

/* Precisions (hal.Precision), HAL 1.1. Device lists use bit (1u << p). */
#define SY_PRECISION_FLOAT32 0
#define SY_PRECISION_FLOAT16 1
#define SY_PRECISION_BFLOAT16 2

/* HAL 1.1 opaque handles issued by the library; 0 = none. */
typedef uint64_t sy_buffer;
typedef uint64_t sy_fence;

/* sy_info.flags */
#define SY_INFO_SERIAL_EXECUTE 1u /* the host must not call execute concurrently on one executable */
#define SY_INFO_CALL_PROFILES 2u  /* HAL 1.1: execute fills sy_execute_call.profile when the host sets it */

typedef struct sy_version {
  uint32_t major;
  uint32_t minor;
} sy_version;

/* Host-owned result of every call. */
typedef struct sy_status {
  sy_code code;
  char message[SY_MESSAGE_CAPACITY];
} sy_status;

/* A dense tensor. In a subgraph (constants, tensor attributes) and as an
 * execute input everything is read-only. As an execute output the host sets
 * dtype, rank, shape and data; execute writes the elements. As an
 * infer_outputs output the host sets shape to a buffer of SY_MAX_RANK dims
 * and rank to -1; the delegate writes dtype, rank and shape[0..rank). */
typedef struct sy_tensor {
  int32_t dtype;
  int32_t rank;
  int64_t *shape;
  void *data;
  uint64_t num_bytes;
} sy_tensor;

/* A value of the subgraph. */
typedef struct sy_value {
  const char *name;
  int32_t dtype;       /* SY_DTYPE_*, 0 = unknown */
  int32_t rank;        /* -1 = unknown */
  const int64_t *dims; /* rank entries, -1 = unknown or symbolic */
  int32_t is_tensor;   /* 0 for sequences, maps, optionals (decline these) */
  int32_t constant;    /* index into sy_subgraph.constants, or -1 */
} sy_value;

typedef struct sy_attribute {
  const char *name;
  int32_t type; /* SY_ATTR_* */
  float f;
  int64_t i;
  const char *s;     /* SY_ATTR_STRING: s_len bytes (NUL-terminated too) */
  uint64_t s_len;
  const sy_tensor *t; /* SY_ATTR_TENSOR */
  uint64_t count;     /* elements of the list below that matches type */
  const float *floats;
  const int64_t *ints;
  const char *const *strings; /* NUL-terminated */
  const sy_tensor *tensors;
} sy_attribute;

typedef struct sy_node {
  const char *name;
  const char *op_type;
  const char *domain; /* "" = ai.onnx */
  uint32_t num_inputs;
  uint32_t num_outputs;
  const int32_t *inputs;  /* value indices; -1 = omitted optional input */
  const int32_t *outputs; /* value indices; -1 = omitted optional output */
  uint32_t num_attributes;
  uint32_t reserved;
  const sy_attribute *attributes;
} sy_node;

typedef struct sy_opset {
  const char *domain; /* "" = ai.onnx */
  int64_t version;
} sy_opset;

typedef struct sy_subgraph {
  uint32_t struct_size;
  uint32_t reserved;
  const char *name;
  uint32_t num_values;
  uint32_t num_nodes;
  const sy_value *values;
  const sy_node *nodes;          /* the host's order: verdicts[i] is for nodes[i] */
  const uint32_t *topo_order;    /* num_nodes node indices, producers first */
  uint32_t num_inputs;
  uint32_t num_outputs;
  const int32_t *inputs;         /* value indices of the boundary inputs, in order */
  const int32_t *outputs;        /* value indices of the boundary outputs, in order */
  uint32_t num_constants;
  uint32_t num_opsets;
  const sy_tensor *constants;    /* initializers; sy_value.constant indexes them */
  const sy_opset *opsets;
} sy_subgraph;

/* One verdict per node; host-owned and zeroed. */
typedef struct sy_verdict {
  int32_t supported;                 /* non-zero = the delegate takes the node */
  char reason[SY_REASON_CAPACITY];   /* why not, when declined (required) */
} sy_verdict;

typedef struct sy_info {
  uint32_t struct_size; /* set by the host */
  int32_t device;       /* SY_DEVICE_* */
  const char *name;     /* a registry name: letters, digits, '-', '_', '.' */
  const char *vendor;
  const char *version;  /* the delegate's own version */
  const char *description;
  uint64_t flags;       /* SY_INFO_* */
} sy_info;

typedef struct sy_op_capability {
  const char *domain; /* "" = ai.onnx */
  const char *op_type;
  int64_t min_opset;  /* 0 = any */
  int64_t max_opset;  /* 0 = no bound */
  const int32_t *dtypes;
  uint32_t num_dtypes; /* 0 = any */
  uint32_t max_rank;   /* 0 = any */
} sy_op_capability;

/* HAL 1.1: one device of the library (library memory, like its strings). */
typedef struct sy_device_desc {
  int32_t kind;             /* SY_DEVICE_* */
  uint32_t memory_kinds;    /* bit (1u << SY_MEMORY_*) per kind of memory it has; 0 = host only */
  const char *name;         /* "" = the host names it after the backend */
  int64_t memory_bytes;     /* 0 = not stated */
  int64_t max_buffer_bytes; /* largest buffer; 0 = not stated; at most memory_bytes when both are stated */
  uint32_t precisions;      /* bit (1u << SY_PRECISION_*) per precision it computes in; 0 = float32 only */
  uint32_t reserved;
  /* the cache key of compiled blobs: a blob is reusable only under an equal key */
  const char *cache_vendor;
  const char *cache_device;
  const char *cache_driver;
} sy_device_desc;

typedef struct sy_capabilities {
  uint32_t struct_size; /* set by the host */
  uint32_t num_ops;
  const sy_op_capability *ops;
  const char *const *layouts; /* e.g. "NCHW" */
  uint32_t num_layouts;
  uint32_t max_inputs;        /* per subgraph; 0 = any */
  int64_t max_tensor_bytes;   /* 0 = no stated limit */
  int32_t control_flow;       /* must be 0 in HAL 1.0 */
  int32_t reserved;
  /* HAL 1.1 */
  uint32_t num_devices;             /* 0 = one device described by sy_info; at most SY_MAX_DEVICES */
  uint32_t device_desc_size;        /* sizeof(sy_device_desc) as the library was built: the stride of devices */
  const sy_device_desc *devices;
} sy_capabilities;

/* HAL 1.1: a [min, max] range of one dim. */
typedef struct sy_dim_range {
  int64_t min;
  int64_t max;
} sy_dim_range;

/* HAL 1.1: the bounds of one boundary input's dims. */
typedef struct sy_shape_bound {
  int32_t input; /* index into sy_subgraph.inputs */
  int32_t rank;  /* entries of dims: the input's rank */
  const sy_dim_range *dims;
} sy_shape_bound;

/* HAL 1.1: what compile chose, written by compile into host memory. */
typedef struct sy_compile_report {
  uint32_t struct_size; /* set by the host */
  int32_t precision;    /* SY_PRECISION_* float32 values are computed in (zeroed: FLOAT32) */
} sy_compile_report;

typedef struct sy_compile_options {
  uint32_t struct_size;
  int32_t threads; /* hint, 0 = the delegate's choice */
  int32_t profile; /* per-node timings wanted */
  int32_t reserved;
  /* HAL 1.1 (check SY_HAS_FIELD before reading) */
  int32_t device;                     /* index into sy_capabilities.devices; 0 = the first */
  int32_t precision;                  /* lowest precision accepted (SY_PRECISION_*); FLOAT32 = no reduction */
  uint32_t num_shape_bounds;
  uint32_t reserved2;
  const sy_shape_bound *shape_bounds; /* at most one per input, by input index */
  sy_compile_report *report;          /* never NULL */
} sy_compile_options;

/* HAL 1.1: one internal kernel of a profiled call. */
typedef struct sy_kernel_timing {
  char name[SY_NAME_CAPACITY]; /* NUL-terminated */
  int64_t start_ns;            /* device clock */
  int64_t end_ns;
  uint32_t first_node;         /* its nodes: node_refs[first_node .. first_node + num_nodes) */
  uint32_t num_nodes;
} sy_kernel_timing;

/* HAL 1.1: the profile of one call. Host memory; the host sets
 * struct_size, the capacities and the two arrays, the library the rest. */
typedef struct sy_call_profile {
  uint32_t struct_size;
  uint32_t kernel_capacity;    /* entries of kernels */
  uint32_t node_capacity;      /* entries of node_refs */
  uint32_t num_kernels;        /* written, <= kernel_capacity */
  uint32_t num_node_refs;      /* written, <= node_capacity */
  int32_t device;              /* written: the device index it ran on */
  int64_t start_ns;            /* written: device clock, ns */
  int64_t end_ns;              /* written, >= start_ns */
  char queue[SY_NAME_CAPACITY]; /* written: the queue or stream ("" = none) */
  sy_kernel_timing *kernels;
  int32_t *node_refs;          /* indices into sy_subgraph.nodes as compile saw them */
} sy_call_profile;

/* HAL 1.1: options of enqueue_with_options. */
#define SY_ENQUEUE_PROFILE 1u /* record the call's profile for fence_profile */
typedef struct sy_enqueue_options {
  uint32_t struct_size;
  uint32_t flags; /* SY_ENQUEUE_* */
} sy_enqueue_options;

/* Arguments of infer_outputs and execute. inputs follow the subgraph's
 * inputs order, outputs its outputs order. */
typedef struct sy_execute_call {
  uint32_t struct_size;
  uint32_t num_inputs;
  uint32_t num_outputs;
  uint32_t reserved;
  const sy_tensor *inputs;
  sy_tensor *outputs;
  /* Becomes non-zero when the host cancels the call (context cancelled or
   * deadline passed). A long execute should poll it and return
   * SY_CANCELLED. Never NULL. */
  const volatile int32_t *cancelled;
  /* HAL 1.1: this call's profile, or NULL. Set only for a library with
   * SY_INFO_CALL_PROFILES, by execute (never infer_outputs). */
  sy_call_profile *profile;
} sy_execute_call;

/* HAL 1.1: what allocate makes. */
typedef struct sy_buffer_request {
  uint32_t struct_size;
  int32_t dtype;          /* SY_DTYPE_* (numeric) */
  int32_t rank;           /* 0..SY_MAX_RANK */
  int32_t memory;         /* SY_MEMORY_* */
  int32_t device;         /* device index, 0 = the first */
  int32_t reserved;
  const int64_t *shape;   /* rank dims, each >= 0 */
} sy_buffer_request;

typedef struct sy_delegate_table {
  uint32_t struct_size; /* sizeof(sy_delegate_table) as the library was built */
  uint32_t reserved;
  sy_version hal_min;   /* HAL versions the library speaks, inclusive */
  sy_version hal_max;
  void *self;           /* the instance, passed back to every call */

  sy_code (*get_info)(void *self, sy_info *info, sy_status *status);
  sy_code (*get_capabilities)(void *self, sy_capabilities *caps, sy_status *status);
  /* verdicts has sg->num_nodes zeroed entries. A declined node needs a
   * reason. Claiming a node is a promise: compile of a subgraph made of
   * claimed nodes must succeed. */
  sy_code (*supports)(void *self, const sy_subgraph *sg, sy_verdict *verdicts, sy_status *status);
  sy_code (*compile)(void *self, const sy_subgraph *sg, const sy_compile_options *options,
                     void **executable, sy_status *status);
  /* Fill every output's dtype, rank and shape for these inputs (their data
   * may be NULL: only dtype and shape may be read). */
  sy_code (*infer_outputs)(void *executable, const sy_execute_call *call, sy_status *status);
  /* Run. Every output has host-allocated data of the dtype and shape the
   * host expects; a mismatch with what the delegate computes is
   * SY_INVALID_ARGUMENT. */
  sy_code (*execute)(void *executable, const sy_execute_call *call, sy_status *status);
  void (*release)(void *executable);
  void (*close)(void *self);

  /* ---- HAL 1.1, optional (all seven or none; see HAL 1.1 above) ---- */

  /* A buffer of req's dtype and shape in req->memory on device req->device.
   * A kind the device lacks is SY_UNSUPPORTED, a size over its limits
   * SY_RESOURCE_EXHAUSTED. */
  sy_code (*allocate)(void *self, const sy_buffer_request *req, sy_buffer *buffer, sy_status *status);
  /* Gives the buffer back; its memory stays valid until every operation
   * using it has signalled. Freeing a handle twice is SY_INVALID_ARGUMENT. */
  sy_code (*free_buffer)(void *self, sy_buffer buffer, sy_status *status);
  /* Copies src (host memory of dst's dtype and shape) into dst after the
   * fences; src has been copied when upload returns. */
  sy_code (*upload)(void *self, sy_buffer dst, const sy_tensor *src, const sy_fence *after, uint32_t num_after,
                    sy_fence *fence, sy_status *status);
  /* Copies src into dst (host memory of src's dtype and shape) after the
   * fences; dst is complete when *fence signals. */
  sy_code (*download)(void *self, const sy_tensor *dst, sy_buffer src, const sy_fence *after, uint32_t num_after,
                      sy_fence *fence, sy_status *status);
  /* Runs the executable on buffers after the fences: inputs in the
   * subgraph's input order, outputs (allocated by the host with allocate,
   * of the shapes infer_outputs gives) in its output order, written in
   * place. May return SY_UNSUPPORTED for inputs it will not take. */
  sy_code (*enqueue)(void *self, void *executable, const sy_buffer *inputs, uint32_t num_inputs, const sy_buffer *outputs,
                     uint32_t num_outputs, const sy_fence *after, uint32_t num_after, sy_fence *fence, sy_status *status);
  /* Waits up to timeout_ns (0: poll) for the fence. Sets *signalled to 1
   * and returns the work's result (SY_OK, or its error with status filled)
   * once it has signalled; sets *signalled to 0 and returns SY_OK when the
   * time ran out first; an unknown fence is SY_INVALID_ARGUMENT with
   * *signalled 0. The host calls it repeatedly to honour its deadlines. */
  sy_code (*wait_fence)(void *self, sy_fence fence, int64_t timeout_ns, int32_t *signalled, sy_status *status);
  /* The host will never name the fence again. */
  void (*release_fence)(void *self, sy_fence fence);

  /* ---- HAL 1.1, optional: profiled enqueue (both or none; only with the
   * seven above; table size SY_DELEGATE_TABLE_SIZE_1_1_PROFILING) ---- */

  /* enqueue with options: SY_ENQUEUE_PROFILE records the call's profile. */
  sy_code (*enqueue_with_options)(void *self, void *executable, const sy_buffer *inputs, uint32_t num_inputs,
                                  const sy_buffer *outputs, uint32_t num_outputs, const sy_fence *after, uint32_t num_after,
                                  const sy_enqueue_options *options, sy_fence *fence, sy_status *status);
  /* Fills profile (see sy_call_profile) for a signalled fence of a call
   * enqueued with SY_ENQUEUE_PROFILE. A fence that has not signalled is
   * SY_FAILED_PRECONDITION; one of a call not profiled SY_UNSUPPORTED. */
  sy_code (*fence_profile)(void *self, sy_fence fence, sy_call_profile *profile, sy_status *status);
} sy_delegate_table;

/* The size of the HAL 1.1 table with device memory (the seven functions). */
#define SY_DELEGATE_TABLE_SIZE_1_1 (offsetof(sy_delegate_table, release_fence) + sizeof(void (*)(void *)))

/* The size of the HAL 1.1 table with profiled enqueue as well. */
#define SY_DELEGATE_TABLE_SIZE_1_1_PROFILING (offsetof(sy_delegate_table, fence_profile) + sizeof(void (*)(void *)))

/* The sizes of the structs as HAL 1.0 defined them (HAL 1.1 appended). */
#define SY_CAPABILITIES_SIZE_1_0 offsetof(sy_capabilities, num_devices)
#define SY_COMPILE_OPTIONS_SIZE_1_0 offsetof(sy_compile_options, device)
#define SY_EXECUTE_CALL_SIZE_1_0 offsetof(sy_execute_call, profile)

/* The size of the HAL 1.0 table: the smallest table a host accepts. */
#define SY_DELEGATE_TABLE_SIZE_1_0 (offsetof(sy_delegate_table, close) + sizeof(void (*)(void *)))

/*
 * The entry point. Fills table (capacity bytes of host memory: copy
 * min(capacity, sizeof(sy_delegate_table)) bytes and set struct_size to
 * sizeof(sy_delegate_table)) with a NEW delegate instance. Returns SY_OK, or
 * an error code with status filled (e.g. SY_UNAVAILABLE "no device found",
 * SY_FAILED_PRECONDITION "host HAL 2.0 is too new"). May be called more than
 * once; each successful call is balanced by one close(self).
 */
typedef sy_code (*sy_entry_point_fn)(uint32_t host_major, uint32_t host_minor, sy_delegate_table *table,
                                     uint32_t capacity, sy_status *status);

SY_EXPORT sy_code switchyard_delegate_open(uint32_t host_major, uint32_t host_minor, sy_delegate_table *table,
                                           uint32_t capacity, sy_status *status);

#ifdef __cplusplus
}
#endif

#endif /* SWITCHYARD_DELEGATE_H */
