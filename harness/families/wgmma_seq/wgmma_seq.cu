// wgmma sequence kernel (sm_90a): several wgmma.mma_async in one kernel. harness/families/wgmma_seq/kernel.py
// fills in the template parts: threads (one or two warpgroups), the accumulator, the step operation on the
// descriptors and, per variant, the sequence of asm statements.
//
// One CTA = one case. The CTA copies its case's shared-memory image (built on the host from the layout model)
// into a window aligned to {{WINDOW_ALIGN}} bytes, fences the async proxy, completes the base descriptors with
// the window's shared address (warpgroup 1 of a two-warpgroup CTA adds wg_a to A's: its 64 rows), derives each
// step's descriptor from the base with one {{STEP_PTX}} (inline PTX, so that ptxas gets the operation as
// written), loads C into the accumulators, issues the sequence and waits for all of it (inside the variant's
// case), and writes every accumulator register of every thread out raw.

struct SeqParams {
    unsigned long long image_offset;  // byte offset of this case's image in `images` (16-byte aligned)
    unsigned long long desc_a;        // base matrix descriptors whose start fields are relative to the window
    unsigned long long desc_b;
    unsigned long long step_a0, step_a1, step_a2, step_a3;  // each step's advance, in the descriptor's units
    unsigned long long step_b0, step_b1, step_b2, step_b3;
    unsigned long long wg_a;          // added to A's base descriptor by warpgroup 1 (two-warpgroup kernels)
    unsigned int image_bytes;         // multiple of 16
    unsigned int variant;             // which compiled immediate combination to issue
    unsigned int scale_d;             // first step: 0 D = A*B, 1 D = A*B + C; later steps accumulate
    unsigned int pad;
};

__device__ __forceinline__ unsigned int fill_seq_window(unsigned char* smem_raw, const unsigned char* image,
                                                        unsigned int image_bytes, unsigned int tid) {
    const unsigned int raw = (unsigned int)__cvta_generic_to_shared(smem_raw);
    const unsigned int window = (raw + ({{WINDOW_ALIGN}}u - 1u)) & ~({{WINDOW_ALIGN}}u - 1u);
    const uint4* src = reinterpret_cast<const uint4*>(image);
    uint4* dst = reinterpret_cast<uint4*>(smem_raw + (window - raw));
    for (unsigned int i = tid; i < image_bytes / 16u; i += {{THREADS}}u) dst[i] = src[i];
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    return window;
}

__device__ __forceinline__ unsigned long long step_desc(unsigned long long base, unsigned long long step) {
    unsigned long long out;
    asm("{{STEP_PTX}} %0, %1, %2;\n" : "=l"(out) : "l"(base), "l"(step));
    return out;
}

extern "C" __global__ void __launch_bounds__({{THREADS}}, 1)
{{KERNEL_NAME}}(const unsigned char* __restrict__ images, const SeqParams* __restrict__ params,
                const unsigned int* __restrict__ a_regs, const unsigned int* __restrict__ c_regs,
                unsigned int* __restrict__ d_out)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned int tid = threadIdx.x;
    const SeqParams p = params[blockIdx.x];
    const unsigned int window = fill_seq_window(smem_raw, images + p.image_offset, p.image_bytes, tid);
    __syncthreads();

    const unsigned long long window_field = (unsigned long long)((window >> 4) & 0x3FFFu);
    const unsigned long long base_a = p.desc_a + window_field{{WG_OFFSET}};
    const unsigned long long base_b = p.desc_b + window_field;
    (void)base_a;
{{STEP_DESCS}}

    const unsigned long long slot = (unsigned long long)blockIdx.x * {{THREADS}}ull + tid;
    // C and D move as the accumulator's own type, so that no conversion sits between the wgmma of a sequence
    // (ptxas serializes a pipeline stage whose accumulators other instructions read)
    {{ACC_TYPE}} d[{{ACC_REGS}}];
    const {{ACC_TYPE}}* c = reinterpret_cast<const {{ACC_TYPE}}*>(c_regs) + slot * {{ACC_REGS}}ull;
#pragma unroll
    for (int i = 0; i < {{ACC_REGS}}; ++i) d[i] = c[i];
    const unsigned int one = 1u;  // scale-d of every step after the first: accumulate
    (void)one;
{{A_SETUP}}

    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    switch (p.variant) {
{{VARIANT_CASES}}
    default: break;
    }

    {{ACC_TYPE}}* out = reinterpret_cast<{{ACC_TYPE}}*>(d_out) + slot * {{ACC_REGS}}ull;
#pragma unroll
    for (int i = 0; i < {{ACC_REGS}}; ++i) out[i] = d[i];
}
