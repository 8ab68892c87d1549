package vulkan

// Vulkan 1.0 structures, mirrored for 64-bit targets (every pointer and
// handle is a uintptr; non-dispatchable handles are 64-bit there). Field
// names are the C names with the first letter upper-cased. The layouts
// are checked against the C header (sizeof and every offsetof) by
// TestStructLayout, which compiles a C program with gcc and the Vulkan
// headers (Debian: libvulkan-dev) and skips, saying so, where they are
// missing.

// vkApplicationInfo mirrors VkApplicationInfo.
type vkApplicationInfo struct {
	SType              uint32
	PNext              uintptr
	PApplicationName   uintptr
	ApplicationVersion uint32
	PEngineName        uintptr
	EngineVersion      uint32
	ApiVersion         uint32
}

// vkInstanceCreateInfo mirrors VkInstanceCreateInfo.
type vkInstanceCreateInfo struct {
	SType                   uint32
	PNext                   uintptr
	Flags                   uint32
	PApplicationInfo        uintptr
	EnabledLayerCount       uint32
	PpEnabledLayerNames     uintptr
	EnabledExtensionCount   uint32
	PpEnabledExtensionNames uintptr
}

// vkPhysicalDeviceLimits mirrors VkPhysicalDeviceLimits.
type vkPhysicalDeviceLimits struct {
	MaxImageDimension1D                             uint32
	MaxImageDimension2D                             uint32
	MaxImageDimension3D                             uint32
	MaxImageDimensionCube                           uint32
	MaxImageArrayLayers                             uint32
	MaxTexelBufferElements                          uint32
	MaxUniformBufferRange                           uint32
	MaxStorageBufferRange                           uint32
	MaxPushConstantsSize                            uint32
	MaxMemoryAllocationCount                        uint32
	MaxSamplerAllocationCount                       uint32
	BufferImageGranularity                          uint64
	SparseAddressSpaceSize                          uint64
	MaxBoundDescriptorSets                          uint32
	MaxPerStageDescriptorSamplers                   uint32
	MaxPerStageDescriptorUniformBuffers             uint32
	MaxPerStageDescriptorStorageBuffers             uint32
	MaxPerStageDescriptorSampledImages              uint32
	MaxPerStageDescriptorStorageImages              uint32
	MaxPerStageDescriptorInputAttachments           uint32
	MaxPerStageResources                            uint32
	MaxDescriptorSetSamplers                        uint32
	MaxDescriptorSetUniformBuffers                  uint32
	MaxDescriptorSetUniformBuffersDynamic           uint32
	MaxDescriptorSetStorageBuffers                  uint32
	MaxDescriptorSetStorageBuffersDynamic           uint32
	MaxDescriptorSetSampledImages                   uint32
	MaxDescriptorSetStorageImages                   uint32
	MaxDescriptorSetInputAttachments                uint32
	MaxVertexInputAttributes                        uint32
	MaxVertexInputBindings                          uint32
	MaxVertexInputAttributeOffset                   uint32
	MaxVertexInputBindingStride                     uint32
	MaxVertexOutputComponents                       uint32
	MaxTessellationGenerationLevel                  uint32
	MaxTessellationPatchSize                        uint32
	MaxTessellationControlPerVertexInputComponents  uint32
	MaxTessellationControlPerVertexOutputComponents uint32
	MaxTessellationControlPerPatchOutputComponents  uint32
	MaxTessellationControlTotalOutputComponents     uint32
	MaxTessellationEvaluationInputComponents        uint32
	MaxTessellationEvaluationOutputComponents       uint32
	MaxGeometryShaderInvocations                    uint32
	MaxGeometryInputComponents                      uint32
	MaxGeometryOutputComponents                     uint32
	MaxGeometryOutputVertices                       uint32
	MaxGeometryTotalOutputComponents                uint32
	MaxFragmentInputComponents                      uint32
	MaxFragmentOutputAttachments                    uint32
	MaxFragmentDualSrcAttachments                   uint32
	MaxFragmentCombinedOutputResources              uint32
	MaxComputeSharedMemorySize                      uint32
	MaxComputeWorkGroupCount                        [3]uint32
	MaxComputeWorkGroupInvocations                  uint32
	MaxComputeWorkGroupSize                         [3]uint32
	SubPixelPrecisionBits                           uint32
	SubTexelPrecisionBits                           uint32
	MipmapPrecisionBits                             uint32
	MaxDrawIndexedIndexValue                        uint32
	MaxDrawIndirectCount                            uint32
	MaxSamplerLodBias                               float32
	MaxSamplerAnisotropy                            float32
	MaxViewports                                    uint32
	MaxViewportDimensions                           [2]uint32
	ViewportBoundsRange                             [2]float32
	ViewportSubPixelBits                            uint32
	MinMemoryMapAlignment                           uintptr
	MinTexelBufferOffsetAlignment                   uint64
	MinUniformBufferOffsetAlignment                 uint64
	MinStorageBufferOffsetAlignment                 uint64
	MinTexelOffset                                  int32
	MaxTexelOffset                                  uint32
	MinTexelGatherOffset                            int32
	MaxTexelGatherOffset                            uint32
	MinInterpolationOffset                          float32
	MaxInterpolationOffset                          float32
	SubPixelInterpolationOffsetBits                 uint32
	MaxFramebufferWidth                             uint32
	MaxFramebufferHeight                            uint32
	MaxFramebufferLayers                            uint32
	FramebufferColorSampleCounts                    uint32
	FramebufferDepthSampleCounts                    uint32
	FramebufferStencilSampleCounts                  uint32
	FramebufferNoAttachmentsSampleCounts            uint32
	MaxColorAttachments                             uint32
	SampledImageColorSampleCounts                   uint32
	SampledImageIntegerSampleCounts                 uint32
	SampledImageDepthSampleCounts                   uint32
	SampledImageStencilSampleCounts                 uint32
	StorageImageSampleCounts                        uint32
	MaxSampleMaskWords                              uint32
	TimestampComputeAndGraphics                     uint32
	TimestampPeriod                                 float32
	MaxClipDistances                                uint32
	MaxCullDistances                                uint32
	MaxCombinedClipAndCullDistances                 uint32
	DiscreteQueuePriorities                         uint32
	PointSizeRange                                  [2]float32
	LineWidthRange                                  [2]float32
	PointSizeGranularity                            float32
	LineWidthGranularity                            float32
	StrictLines                                     uint32
	StandardSampleLocations                         uint32
	OptimalBufferCopyOffsetAlignment                uint64
	OptimalBufferCopyRowPitchAlignment              uint64
	NonCoherentAtomSize                             uint64
}

// vkPhysicalDeviceSparseProperties mirrors VkPhysicalDeviceSparseProperties.
type vkPhysicalDeviceSparseProperties struct {
	ResidencyStandard2DBlockShape            uint32
	ResidencyStandard2DMultisampleBlockShape uint32
	ResidencyStandard3DBlockShape            uint32
	ResidencyAlignedMipSize                  uint32
	ResidencyNonResidentStrict               uint32
}

// vkPhysicalDeviceProperties mirrors VkPhysicalDeviceProperties.
type vkPhysicalDeviceProperties struct {
	ApiVersion        uint32
	DriverVersion     uint32
	VendorID          uint32
	DeviceID          uint32
	DeviceType        uint32
	DeviceName        [256]byte
	PipelineCacheUUID [16]uint8
	Limits            vkPhysicalDeviceLimits
	SparseProperties  vkPhysicalDeviceSparseProperties
}

// vkExtent3D mirrors VkExtent3D.
type vkExtent3D struct {
	Width  uint32
	Height uint32
	Depth  uint32
}

// vkQueueFamilyProperties mirrors VkQueueFamilyProperties.
type vkQueueFamilyProperties struct {
	QueueFlags                  uint32
	QueueCount                  uint32
	TimestampValidBits          uint32
	MinImageTransferGranularity vkExtent3D
}

// vkMemoryType mirrors VkMemoryType.
type vkMemoryType struct {
	PropertyFlags uint32
	HeapIndex     uint32
}

// vkMemoryHeap mirrors VkMemoryHeap.
type vkMemoryHeap struct {
	Size  uint64
	Flags uint32
}

// vkPhysicalDeviceMemoryProperties mirrors VkPhysicalDeviceMemoryProperties.
type vkPhysicalDeviceMemoryProperties struct {
	MemoryTypeCount uint32
	MemoryTypes     [32]vkMemoryType
	MemoryHeapCount uint32
	MemoryHeaps     [16]vkMemoryHeap
}

// vkDeviceQueueCreateInfo mirrors VkDeviceQueueCreateInfo.
type vkDeviceQueueCreateInfo struct {
	SType            uint32
	PNext            uintptr
	Flags            uint32
	QueueFamilyIndex uint32
	QueueCount       uint32
	PQueuePriorities uintptr
}

// vkDeviceCreateInfo mirrors VkDeviceCreateInfo.
type vkDeviceCreateInfo struct {
	SType                   uint32
	PNext                   uintptr
	Flags                   uint32
	QueueCreateInfoCount    uint32
	PQueueCreateInfos       uintptr
	EnabledLayerCount       uint32
	PpEnabledLayerNames     uintptr
	EnabledExtensionCount   uint32
	PpEnabledExtensionNames uintptr
	PEnabledFeatures        uintptr
}

// vkBufferCreateInfo mirrors VkBufferCreateInfo.
type vkBufferCreateInfo struct {
	SType                 uint32
	PNext                 uintptr
	Flags                 uint32
	Size                  uint64
	Usage                 uint32
	SharingMode           uint32
	QueueFamilyIndexCount uint32
	PQueueFamilyIndices   uintptr
}

// vkMemoryRequirements mirrors VkMemoryRequirements.
type vkMemoryRequirements struct {
	Size           uint64
	Alignment      uint64
	MemoryTypeBits uint32
}

// vkMemoryAllocateInfo mirrors VkMemoryAllocateInfo.
type vkMemoryAllocateInfo struct {
	SType           uint32
	PNext           uintptr
	AllocationSize  uint64
	MemoryTypeIndex uint32
}

// vkShaderModuleCreateInfo mirrors VkShaderModuleCreateInfo.
type vkShaderModuleCreateInfo struct {
	SType    uint32
	PNext    uintptr
	Flags    uint32
	CodeSize uintptr
	PCode    uintptr
}

// vkDescriptorSetLayoutBinding mirrors VkDescriptorSetLayoutBinding.
type vkDescriptorSetLayoutBinding struct {
	Binding            uint32
	DescriptorType     uint32
	DescriptorCount    uint32
	StageFlags         uint32
	PImmutableSamplers uintptr
}

// vkDescriptorSetLayoutCreateInfo mirrors VkDescriptorSetLayoutCreateInfo.
type vkDescriptorSetLayoutCreateInfo struct {
	SType        uint32
	PNext        uintptr
	Flags        uint32
	BindingCount uint32
	PBindings    uintptr
}

// vkPushConstantRange mirrors VkPushConstantRange.
type vkPushConstantRange struct {
	StageFlags uint32
	Offset     uint32
	Size       uint32
}

// vkPipelineLayoutCreateInfo mirrors VkPipelineLayoutCreateInfo.
type vkPipelineLayoutCreateInfo struct {
	SType                  uint32
	PNext                  uintptr
	Flags                  uint32
	SetLayoutCount         uint32
	PSetLayouts            uintptr
	PushConstantRangeCount uint32
	PPushConstantRanges    uintptr
}

// vkSpecializationMapEntry mirrors VkSpecializationMapEntry.
type vkSpecializationMapEntry struct {
	ConstantID uint32
	Offset     uint32
	Size       uintptr
}

// vkSpecializationInfo mirrors VkSpecializationInfo.
type vkSpecializationInfo struct {
	MapEntryCount uint32
	PMapEntries   uintptr
	DataSize      uintptr
	PData         uintptr
}

// vkPipelineShaderStageCreateInfo mirrors VkPipelineShaderStageCreateInfo.
type vkPipelineShaderStageCreateInfo struct {
	SType               uint32
	PNext               uintptr
	Flags               uint32
	Stage               uint32
	Module              uintptr
	PName               uintptr
	PSpecializationInfo uintptr
}

// vkComputePipelineCreateInfo mirrors VkComputePipelineCreateInfo.
type vkComputePipelineCreateInfo struct {
	SType              uint32
	PNext              uintptr
	Flags              uint32
	Stage              vkPipelineShaderStageCreateInfo
	Layout             uintptr
	BasePipelineHandle uintptr
	BasePipelineIndex  int32
}

// vkDescriptorPoolSize mirrors VkDescriptorPoolSize.
type vkDescriptorPoolSize struct {
	Type            uint32
	DescriptorCount uint32
}

// vkDescriptorPoolCreateInfo mirrors VkDescriptorPoolCreateInfo.
type vkDescriptorPoolCreateInfo struct {
	SType         uint32
	PNext         uintptr
	Flags         uint32
	MaxSets       uint32
	PoolSizeCount uint32
	PPoolSizes    uintptr
}

// vkDescriptorSetAllocateInfo mirrors VkDescriptorSetAllocateInfo.
type vkDescriptorSetAllocateInfo struct {
	SType              uint32
	PNext              uintptr
	DescriptorPool     uintptr
	DescriptorSetCount uint32
	PSetLayouts        uintptr
}

// vkDescriptorBufferInfo mirrors VkDescriptorBufferInfo.
type vkDescriptorBufferInfo struct {
	Buffer uintptr
	Offset uint64
	Range  uint64
}

// vkWriteDescriptorSet mirrors VkWriteDescriptorSet.
type vkWriteDescriptorSet struct {
	SType            uint32
	PNext            uintptr
	DstSet           uintptr
	DstBinding       uint32
	DstArrayElement  uint32
	DescriptorCount  uint32
	DescriptorType   uint32
	PImageInfo       uintptr
	PBufferInfo      uintptr
	PTexelBufferView uintptr
}

// vkCommandPoolCreateInfo mirrors VkCommandPoolCreateInfo.
type vkCommandPoolCreateInfo struct {
	SType            uint32
	PNext            uintptr
	Flags            uint32
	QueueFamilyIndex uint32
}

// vkCommandBufferAllocateInfo mirrors VkCommandBufferAllocateInfo.
type vkCommandBufferAllocateInfo struct {
	SType              uint32
	PNext              uintptr
	CommandPool        uintptr
	Level              uint32
	CommandBufferCount uint32
}

// vkCommandBufferBeginInfo mirrors VkCommandBufferBeginInfo.
type vkCommandBufferBeginInfo struct {
	SType            uint32
	PNext            uintptr
	Flags            uint32
	PInheritanceInfo uintptr
}

// vkMemoryBarrier mirrors VkMemoryBarrier.
type vkMemoryBarrier struct {
	SType         uint32
	PNext         uintptr
	SrcAccessMask uint32
	DstAccessMask uint32
}

// vkBufferCopy mirrors VkBufferCopy.
type vkBufferCopy struct {
	SrcOffset uint64
	DstOffset uint64
	Size      uint64
}

// vkSubmitInfo mirrors VkSubmitInfo.
type vkSubmitInfo struct {
	SType                uint32
	PNext                uintptr
	WaitSemaphoreCount   uint32
	PWaitSemaphores      uintptr
	PWaitDstStageMask    uintptr
	CommandBufferCount   uint32
	PCommandBuffers      uintptr
	SignalSemaphoreCount uint32
	PSignalSemaphores    uintptr
}

// vkFenceCreateInfo mirrors VkFenceCreateInfo.
type vkFenceCreateInfo struct {
	SType uint32
	PNext uintptr
	Flags uint32
}

// vkQueryPoolCreateInfo mirrors VkQueryPoolCreateInfo.
type vkQueryPoolCreateInfo struct {
	SType              uint32
	PNext              uintptr
	Flags              uint32
	QueryType          uint32
	QueryCount         uint32
	PipelineStatistics uint32
}
