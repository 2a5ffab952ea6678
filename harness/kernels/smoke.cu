// Smallest kernel that proves NVRTC can target an arch: one store per thread.
extern "C" __global__ void smoke(unsigned int* out) { out[threadIdx.x] = threadIdx.x * 3u + 1u; }
