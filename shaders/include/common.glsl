// common.glsl - helpers shared by all shaders.
#ifndef VKLLM_COMMON_GLSL
#define VKLLM_COMMON_GLSL

#extension GL_EXT_control_flow_attributes : enable

// Workgroup size: specialization constant 0 (the runtime sets it; power of two for the
// reduction shaders).
layout(local_size_x_id = 0) in;

// Index of this invocation over a 2D grid of workgroups (x fastest), for 1D work larger than
// maxComputeWorkGroupCount[0] * workgroup size.
uint global_index_2d() {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
           + gl_LocalInvocationID.x;
}

#endif
