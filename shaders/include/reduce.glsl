// reduce.glsl - workgroup-wide sum and max through shared memory. Works for any subgroup size;
// the workgroup size must be a power of two no larger than REDUCE_MAX_WG.
#ifndef VKLLM_REDUCE_GLSL
#define VKLLM_REDUCE_GLSL

#define REDUCE_MAX_WG 1024
shared float red_buf[REDUCE_MAX_WG];

float wg_sum(float v) {
    uint t = gl_LocalInvocationID.x;
    red_buf[t] = v;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (t < s) red_buf[t] += red_buf[t + s];
        barrier();
    }
    float r = red_buf[0];
    barrier();
    return r;
}

float wg_max(float v) {
    uint t = gl_LocalInvocationID.x;
    red_buf[t] = v;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (t < s) red_buf[t] = max(red_buf[t], red_buf[t + s]);
        barrier();
    }
    float r = red_buf[0];
    barrier();
    return r;
}

#endif
