// wgmma timing kernels (sm_90a). harness/timing/source.py fills in the template parts: the accumulator type
// and count, the A operand (descriptor or registers) and the one wgmma.mma_async of this form (MMA(DA, DB)).
//
// Operands stay in shared memory for the whole kernel: the host builds one image (A then B, K-major, the
// form's swizzle), each CTA copies it into a 1024-byte-aligned window and fences the async proxy. The
// descriptors' start fields are relative to the window; K-steps inside a swizzle row add kstep[s] (16-byte
// units) to the start field of both descriptors, as CUTLASS advances a K-major SW128 descriptor.
//
//   {{KERNEL_NAME}}_lat:  one CTA, one warpgroup. Per repetition: bar.sync, clock64, wgmma.fence, one
//                         wgmma, commit_group, wait_group 0, clock64 (issue to wait), then an empty clock64
//                         pair (the overhead of the measurement itself). Thread 0 writes both.
//   {{KERNEL_NAME}}_tput: CONSUMER_WGS warpgroups per CTA, one CTA per SM (the host asks for enough dynamic
//                         shared memory that a second CTA cannot fit). Each warpgroup loops: wgmma.fence,
//                         KSTEPS wgmma into its own accumulators (the canonical chain), commit_group,
//                         wait_group 1 (one group stays in flight while the next issues). Thread 0 records
//                         %smid, clock64 and %globaltimer before (after a CTA barrier) and after.

#define CONSUMER_WGS {{CONSUMER_WGS}}
#define KSTEPS 4

{{SMEM_WINDOW}}

struct TimingParams {
    unsigned long long desc_a;   // start fields relative to the window (desc_a unused for RS)
    unsigned long long desc_b;
    unsigned int image_bytes;
    unsigned int iters;          // throughput: loop iterations (KSTEPS wgmma each, per warpgroup)
    unsigned int warmup;         // latency: repetitions not recorded
    unsigned int reps;           // latency: repetitions recorded
    unsigned int kstep[KSTEPS];  // start-field increment of K-step s, in 16-byte units
    unsigned int scale_d;        // 1: D = A*B + D
    unsigned int sink;           // never set by the host: keeps the accumulators live
};

{{DEVICE_HELPERS}}

#define MMA(DESC_A, DESC_B) {{MMA_BODY}}

// Pin every accumulator register here: no ordinary instruction reading them may be scheduled before this
// point (a read of an accumulator inside a wgmma pipeline stage makes ptxas serialize every wgmma, C7514).
#define FENCE_ACC()                                                                                           \
    _Pragma("unroll") for (int i_ = 0; i_ < {{ACC_REGS}}; ++i_) asm volatile("" : "+{{ACC_CON}}"(d[i_]) :: "memory");

extern "C" __global__ void __launch_bounds__(128, 1)
{{KERNEL_NAME}}_lat(const unsigned char* __restrict__ images, const TimingParams* __restrict__ params,
                    unsigned long long* __restrict__ out, unsigned int* __restrict__ sink)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned int tid = threadIdx.x;
    const TimingParams p = *params;
    const unsigned int window = fill_smem_window(smem_raw, images, p.image_bytes, tid);
    __syncthreads();
    const unsigned long long wf = (unsigned long long)((window >> 4) & 0x3FFFu);
    const unsigned long long desc_a = p.desc_a + wf, desc_b = p.desc_b + wf;
    (void)desc_a;
    {{ACC_TYPE}} d[{{ACC_REGS}}];
#pragma unroll
    for (int i = 0; i < {{ACC_REGS}}; ++i) d[i] = ({{ACC_TYPE}})0;
    FENCE_ACC();
    const unsigned int a0 = 0x3C003C00u ^ (p.sink * tid), a1 = a0, a2 = a0, a3 = a0;  // RS: finite non-zero A
    (void)a1; (void)a2; (void)a3;

    for (unsigned int r = 0; r < p.warmup + p.reps; ++r) {
        asm volatile("bar.sync 1, 128;" ::: "memory");
        const unsigned long long t0 = clk();
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        MMA(desc_a, desc_b);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        const unsigned long long t1 = clk();
        FENCE_ACC();
        const unsigned long long e0 = clk();
        const unsigned long long e1 = clk();
        if (tid == 0 && r >= p.warmup) {
            out[r - p.warmup] = t1 - t0;
            out[p.reps + r - p.warmup] = e1 - e0;
        }
    }
    if (p.sink) {
        unsigned int s = 0;
#pragma unroll
        for (int i = 0; i < {{ACC_REGS}}; ++i) s ^= {{TO_BITS}}(d[i]);
        sink[tid] = s;
    }
}

extern "C" __global__ void __launch_bounds__(128 * CONSUMER_WGS, 1)
{{KERNEL_NAME}}_tput(const unsigned char* __restrict__ images, const TimingParams* __restrict__ params,
                     unsigned long long* __restrict__ out, unsigned int* __restrict__ sink)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned int tid = threadIdx.x;
    const TimingParams p = *params;
    unsigned int window;
    if (tid < 128u) {
        window = fill_smem_window(smem_raw, images, p.image_bytes, tid);
    } else {
        const unsigned int raw = (unsigned int)__cvta_generic_to_shared(smem_raw);
        window = (raw + 1023u) & ~1023u;
    }
    __syncthreads();
    const unsigned long long wf = (unsigned long long)((window >> 4) & 0x3FFFu);
    const unsigned long long desc_a = p.desc_a + wf, desc_b = p.desc_b + wf;
    (void)desc_a;
    const unsigned long long k0 = p.kstep[0], k1 = p.kstep[1], k2 = p.kstep[2], k3 = p.kstep[3];
    {{ACC_TYPE}} d[{{ACC_REGS}}];
#pragma unroll
    for (int i = 0; i < {{ACC_REGS}}; ++i) d[i] = ({{ACC_TYPE}})0;
    FENCE_ACC();
    const unsigned int a0 = 0x3C003C00u ^ (p.sink * tid), a1 = a0, a2 = a0, a3 = a0;  // RS: finite non-zero A
    (void)a1; (void)a2; (void)a3;

    __syncthreads();
    unsigned long long t0 = 0, g0 = 0;
    if (tid == 0) { g0 = gtimer(); t0 = clk(); }
    for (unsigned int it = 0; it < p.iters; ++it) {
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        MMA(desc_a + k0, desc_b + k0);
        MMA(desc_a + k1, desc_b + k1);
        MMA(desc_a + k2, desc_b + k2);
        MMA(desc_a + k3, desc_b + k3);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    FENCE_ACC();
    __syncthreads();
    if (tid == 0) {
        const unsigned long long t1 = clk(), g1 = gtimer();
        unsigned long long* o = out + (unsigned long long)blockIdx.x * 5ull;
        o[0] = smid(); o[1] = t0; o[2] = t1; o[3] = g0; o[4] = g1;
    }
    if (p.sink) {
        unsigned int s = 0;
#pragma unroll
        for (int i = 0; i < {{ACC_REGS}}; ++i) s ^= {{TO_BITS}}(d[i]);
        sink[blockIdx.x * 128u * CONSUMER_WGS + tid] = s;
    }
}
