// tcgen05.mma timing kernels (sm_100a / sm_103a). harness/timing/source.py fills in the CTA group and the MMA
// statement of the form (the same text the validation kernel issues: harness/families/tcgen05/forms.py).
//
// A and B stay in shared memory (K-major, 128B swizzle, a 64-element K tile; K-steps add kstep[s] to both
// descriptors' start fields); A comes from Tensor Memory for TS; D is in TMEM. M and N are runtime values of
// the instruction descriptor, so one kernel per (CTA group, A source) serves every N.
//
//   {{KERNEL_NAME}}_lat:  one CTA (or a cluster of two for cta_group::2). The issuing thread, per repetition:
//                         clock64, one tcgen05.mma, tcgen05.commit to an mbarrier, wait on its phase, clock64
//                         (issue to completion as its issuer sees it), then an empty clock64 pair.
//   {{KERNEL_NAME}}_tput: one CTA (pair) per SM (pair of SMs). The issuing thread loops: KSTEPS MMAs into the
//                         same accumulator, commit to mbarrier it%2, wait for the previous iteration's
//                         barrier (two groups in flight). Thread 0 of every CTA records %smid, clock64 and
//                         %globaltimer around the loop (after a CTA/cluster barrier).

#define CTA_GROUP {{CTA_GROUP}}
#define KSTEPS 4

{{SMEM_WINDOW}}

struct TimingParams {
    unsigned long long desc_a;   // start fields relative to the window (unused for TS)
    unsigned long long desc_b;
    unsigned int image_bytes;
    unsigned int iters;
    unsigned int warmup;
    unsigned int reps;
    unsigned int kstep[KSTEPS];
    unsigned int idesc;          // instruction descriptor (M, N, types)
    unsigned int enable_input_d; // 1: D = A*B + D
    unsigned int alloc_cols;     // TMEM columns to allocate
    unsigned int a_tmem_col;     // TS: first TMEM column of A
    unsigned int a_tmem_cols;    // TS: columns of A to zero first
    unsigned int sink;
};

{{DEVICE_HELPERS}}

__device__ __forceinline__ void mbar_wait(unsigned int bar, unsigned int parity) {
    unsigned int done = 0;
    while (!done) {
        asm volatile("{\n.reg .pred q;\nmbarrier.try_wait.parity.shared::cta.b64 q, [%1], %2;\nselp.u32 %0, 1, 0, q;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    }
}

// Window, TMEM allocation, mbarriers, A zeroed in TMEM (TS); ends with every CTA of the group synchronised.
#define SETUP()                                                                                              \
    extern __shared__ __align__(1024) unsigned char smem_raw[];                                              \
    __shared__ unsigned int tmem_base;                                                                        \
    __shared__ __align__(8) unsigned long long mbars[2];                                                      \
    const unsigned int tid = threadIdx.x, warp = tid / 32u;                                                   \
    const TimingParams p = *params;                                                                           \
    const unsigned int window = fill_smem_window(smem_raw, images, p.image_bytes, tid);                      \
    if (warp == 0) {                                                                                          \
        asm volatile("tcgen05.alloc.cta_group::" "{{CTA_GROUP}}" ".sync.aligned.shared::cta.b32 [%0], %1;\n"  \
                     :: "r"(smem_u32(&tmem_base)), "r"(p.alloc_cols) : "memory");                             \
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::" "{{CTA_GROUP}}" ".sync.aligned;\n" ::: "memory"); \
    }                                                                                                         \
    if (tid == 0) {                                                                                           \
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" :: "r"(smem_u32(&mbars[0])) : "memory");     \
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" :: "r"(smem_u32(&mbars[1])) : "memory");     \
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");                                  \
    }                                                                                                         \
    asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");                                        \
    {{CTA_SYNC}}                                                                                              \
    asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");                                         \
    const unsigned int taddr = tmem_base;                                                                     \
    const unsigned int lane_base = (32u * warp) << 16;                                                        \
    for (unsigned int c = 0; c < p.a_tmem_cols; c += 8u) {                                                    \
        const unsigned int z = p.sink;                                                                        \
        asm volatile("tcgen05.st.sync.aligned.32x32b.x8.b32 [%0], {%1, %1, %1, %1, %1, %1, %1, %1};\n"       \
                     :: "r"(taddr + lane_base + p.a_tmem_col + c), "r"(z) : "memory");                        \
    }                                                                                                         \
    asm volatile("tcgen05.wait::st.sync.aligned;\n" ::: "memory");                                            \
    asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");                                        \
    {{CTA_SYNC}}                                                                                              \
    asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");                                         \
    const unsigned long long wf = (unsigned long long)((window >> 4) & 0x3FFFu);                              \
    const unsigned long long da = p.desc_a + wf, db = p.desc_b + wf;                                          \
    const unsigned int d_tmem = taddr;                                                                        \
    const unsigned int a_tmem = taddr + p.a_tmem_col;                                                         \
    (void)da; (void)a_tmem; (void)d_tmem;

#define TEARDOWN()                                                                                            \
    __syncwarp();                                                                                             \
    asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");                                        \
    {{CTA_SYNC}}                                                                                              \
    if (warp == 0) {                                                                                          \
        asm volatile("tcgen05.dealloc.cta_group::" "{{CTA_GROUP}}" ".sync.aligned.b32 %0, %1;\n"              \
                     :: "r"(taddr), "r"(p.alloc_cols) : "memory");                                            \
    }

// One MMA at K-step offset K (16-byte units): the form's statement reads desc_a, desc_b, a_tmem, d_tmem, p.
#define MMA_AT(K) {                                                                                           \
        const unsigned long long desc_a = da + (K), desc_b = db + (K);                                        \
        (void)desc_a;                                                                                         \
        {{MMA}}                                                                                               \
    }

extern "C" __global__ void __launch_bounds__(128, 1) {{CLUSTER_ATTR}}
{{KERNEL_NAME}}_lat(const unsigned char* __restrict__ images, const TimingParams* __restrict__ params,
                    unsigned long long* __restrict__ out, unsigned int* __restrict__ sink)
{
    SETUP()
    (void)sink;
    if ({{ISSUER}} && tid == 0) {
        unsigned long long& mbar = mbars[0];
        for (unsigned int r = 0; r < p.warmup + p.reps; ++r) {
            const unsigned long long t0 = clk();
            MMA_AT(0ull)
            {{COMMIT}}
            mbar_wait(smem_u32(&mbar), r & 1u);
            const unsigned long long t1 = clk();
            const unsigned long long e0 = clk();
            const unsigned long long e1 = clk();
            if (r >= p.warmup) {
                out[r - p.warmup] = t1 - t0;
                out[p.reps + r - p.warmup] = e1 - e0;
            }
        }
        asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
    }
    TEARDOWN()
}

extern "C" __global__ void __launch_bounds__(128, 1) {{CLUSTER_ATTR}}
{{KERNEL_NAME}}_tput(const unsigned char* __restrict__ images, const TimingParams* __restrict__ params,
                     unsigned long long* __restrict__ out, unsigned int* __restrict__ sink)
{
    SETUP()
    (void)sink;
    const unsigned long long k0 = p.kstep[0], k1 = p.kstep[1], k2 = p.kstep[2], k3 = p.kstep[3];
    unsigned long long t0 = 0, g0 = 0;
    if (tid == 0) { g0 = gtimer(); t0 = clk(); }
    if ({{ISSUER}} && tid == 0) {
        for (unsigned int it = 0; it < p.iters; ++it) {
            MMA_AT(k0)
            MMA_AT(k1)
            MMA_AT(k2)
            MMA_AT(k3)
            {
                unsigned long long& mbar = mbars[it & 1u];
                {{COMMIT}}
            }
            if (it >= 1u) mbar_wait(smem_u32(&mbars[(it - 1u) & 1u]), ((it - 1u) >> 1) & 1u);
        }
        if (p.iters) mbar_wait(smem_u32(&mbars[(p.iters - 1u) & 1u]), ((p.iters - 1u) >> 1) & 1u);
        asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
    }
    __syncwarp();
    {{CTA_SYNC}}
    if (tid == 0) {
        const unsigned long long t1 = clk(), g1 = gtimer();
        unsigned long long* o = out + (unsigned long long)blockIdx.x * 5ull;
        o[0] = smid(); o[1] = t0; o[2] = t1; o[3] = g0; o[4] = g1;
    }
    TEARDOWN()
}
